package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// healthTTL is how long a health report is reused: probes poll /health
// often, and a Cosmos ping is several reads.
const healthTTL = 5 * time.Second

// healthCheckTimeout bounds one round of backend checks.
const healthCheckTimeout = 3 * time.Second

// pinger is implemented by backends that can check they are reachable.
type pinger interface {
	Ping(ctx context.Context) error
}

// kinder is implemented by backends that name what they are (sqlite,
// cosmos, ...).
type kinder interface{ Kind() string }

type backendHealth struct {
	Configured bool   `json:"configured"`
	Kind       string `json:"kind,omitempty"`
	Reachable  *bool  `json:"reachable,omitempty"`
}

type healthReport struct {
	Status   string                   `json:"status"`
	Backends map[string]backendHealth `json:"backends"`
	code     int
	at       time.Time
	cause    error // why it is degraded, for the log
}

// healthCache holds the last report and runs at most one check at a time.
// A check belongs to the server, not to the probe that started it: it runs
// on a context of its own with its own deadline, so a probe that hangs up
// cannot cut it short and leave a "context canceled" failure cached for
// every probe after it.
type healthCache struct {
	mu       sync.Mutex
	last     *healthReport
	inflight chan struct{} // closed when the running check has stored its report
}

// report returns a fresh enough report, starting a check if none is
// running, or ctx's error if ctx ends first (the check goes on).
func (c *healthCache) report(ctx context.Context, check func() *healthReport) (*healthReport, error) {
	c.mu.Lock()
	if c.last != nil && time.Since(c.last.at) <= healthTTL {
		rep := c.last
		c.mu.Unlock()
		return rep, nil
	}
	done := c.inflight
	if done == nil {
		done = make(chan struct{})
		c.inflight = done
		go func() {
			rep := check()
			c.mu.Lock()
			c.last, c.inflight = rep, nil
			c.mu.Unlock()
			close(done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.last, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// handleHealth reports which backends are configured and whether they
// answer; 503 when the agent or the store does not. It is open (no key), so
// it says nothing about why: the reasons go to the log.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	rep, err := s.health.report(r.Context(), s.checkHealth)
	if err != nil {
		return // the probe went away; nobody to answer
	}
	if rep.cause != nil {
		noteCause(w, rep.cause)
	}
	writeJSON(w, rep.code, rep)
}

// checkHealth checks every backend, on a context that no request owns.
func (s *Server) checkHealth() *healthReport {
	ctx, cancel := context.WithTimeout(context.Background(), healthCheckTimeout)
	defer cancel()
	var causes []error
	check := func(name string, b any) backendHealth {
		if b == nil {
			return backendHealth{}
		}
		h := backendHealth{Configured: true}
		if k, ok := b.(kinder); ok {
			h.Kind = k.Kind()
		}
		if p, ok := b.(pinger); ok {
			err := p.Ping(ctx)
			ok := err == nil
			h.Reachable = &ok
			if err != nil {
				s.log.Warn("health: backend not reachable", "backend", name, "error", err)
				causes = append(causes, fmt.Errorf("%s: %w", name, err))
			}
		}
		return h
	}
	rep := &healthReport{Status: "ok", code: http.StatusOK, Backends: map[string]backendHealth{
		"agent":         check("agent", s.agentProbe()),
		"store":         check("store", s.cfg.Store),
		"audio_storage": check("audio_storage", s.cfg.Blobs),
		"transcription": check("transcription", s.cfg.Transcriber),
	}}
	a := rep.Backends["agent"]
	a.Kind = s.cfg.Provider.Name()
	rep.Backends["agent"] = a
	for _, name := range []string{"agent", "store"} {
		if b := rep.Backends[name]; b.Reachable != nil && !*b.Reachable {
			rep.Status, rep.code = "degraded", http.StatusServiceUnavailable
			rep.cause = errors.Join(causes...)
		}
	}
	rep.at = time.Now()
	return rep
}
