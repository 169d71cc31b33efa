package server

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// healthTTL is how long a health report is reused: probes poll /health
// often, and a Cosmos ping is several reads.
const healthTTL = 5 * time.Second

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
}

// healthCache holds the last report.
type healthCache struct {
	mu   sync.Mutex
	last *healthReport
}

// handleHealth reports which backends are configured and whether they
// answer; 503 when the agent or the store does not. It is open (no key), so
// it says nothing about why: the reasons go to the log.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.health.last == nil || time.Since(s.health.last.at) > healthTTL {
		s.health.last = s.checkHealth(r.Context())
	}
	writeJSON(w, s.health.last.code, s.health.last)
}

func (s *Server) checkHealth(ctx context.Context) *healthReport {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
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
			}
		}
		return h
	}
	rep := &healthReport{Status: "ok", code: http.StatusOK, at: time.Now(), Backends: map[string]backendHealth{
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
		}
	}
	return rep
}
