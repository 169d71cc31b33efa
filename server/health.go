package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
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
	// Failed names the check the agent failed (a failure* value), so that
	// whoever reads the report knows where to look; the cause goes to the
	// log.
	Failed string `json:"failed,omitempty"`
}

// What an agent's health check can fail on.
const (
	failureUnreachable = "unreachable" // no answer: the network, a timeout
	failureCredentials = "credentials" // no credential could be had, or the service refused it (401, 403)
	failureNotFound    = "not_found"   // the service does not know the deployment, model, agent or app
	failureUpstream    = "upstream"    // any other failed or malformed answer
)

// agentFailure names the check an agent's probe failed with err, by the
// error's code: the same classification the phone's errors are made by.
func agentFailure(err error) string {
	switch brainwire.ErrorCode(err) {
	case brainwire.EUpstreamAuth:
		return failureCredentials
	case brainwire.ENotFound:
		return failureNotFound
	case brainwire.EUpstream, brainwire.EBusy:
		return failureUpstream
	}
	return failureUnreachable
}

type healthReport struct {
	Status   string                   `json:"status"`
	Backends map[string]backendHealth `json:"backends"`
	code     int
	at       time.Time
	cause    error // why it is degraded, for the log

	// Simulator is true when captures go to the built-in keyword
	// simulator: no model classifies them.
	Simulator bool `json:"simulator,omitempty"`
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
// it says no more than which check the agent failed: the reasons go to the
// log.
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
// The agent service's calls are marked as a health probe's
// (brainwire.WithHealthProbe): asked once, never retried.
func (s *Server) checkHealth() *healthReport {
	ctx, cancel := context.WithTimeout(context.Background(), healthCheckTimeout)
	defer cancel()
	var causes []error
	check := func(ctx context.Context, name string, b any) (backendHealth, error) {
		if b == nil {
			return backendHealth{}, nil
		}
		h := backendHealth{Configured: true}
		if k, ok := b.(kinder); ok {
			h.Kind = k.Kind()
		}
		p, ok := b.(pinger)
		if !ok {
			return h, nil
		}
		err := p.Ping(ctx)
		reachable := err == nil
		h.Reachable = &reachable
		if err != nil {
			s.log.Warn("health: backend not reachable", "backend", name, "error", err)
			causes = append(causes, fmt.Errorf("%s: %w", name, err))
		}
		return h, err
	}
	agent, err := check(brainwire.WithHealthProbe(ctx), "agent", s.agentProbe())
	agent.Kind = s.cfg.Provider.Name()
	if err != nil {
		agent.Failed = agentFailure(err)
	}
	rep := &healthReport{Status: "ok", Simulator: s.cfg.Simulator, code: http.StatusOK, Backends: map[string]backendHealth{"agent": agent}}
	rep.Backends["store"], _ = check(ctx, "store", s.cfg.Store)
	rep.Backends["audio_storage"], _ = check(ctx, "audio_storage", s.cfg.Blobs)
	rep.Backends["transcription"], _ = check(ctx, "transcription", s.cfg.Transcriber)
	for _, name := range []string{"agent", "store"} {
		if b := rep.Backends[name]; b.Reachable != nil && !*b.Reachable {
			rep.Status, rep.code = "degraded", http.StatusServiceUnavailable
			rep.cause = errors.Join(causes...)
		}
	}
	rep.at = time.Now()
	return rep
}
