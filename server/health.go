package server

import (
	"context"
	"net/http"
	"time"
)

// pinger is implemented by backends that can check they are reachable.
type pinger interface {
	Ping(ctx context.Context) error
}

type backendHealth struct {
	Configured bool   `json:"configured"`
	Kind       string `json:"kind,omitempty"`
	Reachable  *bool  `json:"reachable,omitempty"`
	Error      string `json:"error,omitempty"`
}

// handleHealth reports which backends are configured and whether they
// answer. It is open (no key) and says nothing secret. 503 when a
// configured backend the captures need does not answer.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	check := func(kind string, b any) backendHealth {
		if b == nil {
			return backendHealth{Configured: false}
		}
		h := backendHealth{Configured: true, Kind: kind}
		if p, ok := b.(pinger); ok {
			err := p.Ping(ctx)
			ok := err == nil
			h.Reachable = &ok
			if err != nil {
				h.Error = err.Error()
			}
		}
		return h
	}
	backends := map[string]backendHealth{
		"agent":         check(s.cfg.Provider.Name(), s.cfg.Provider),
		"store":         check(kindOf(s.cfg.Store), s.cfg.Store),
		"audio_storage": check(kindOf(s.cfg.Blobs), s.cfg.Blobs),
		"transcription": check(kindOf(s.cfg.Transcriber), s.cfg.Transcriber),
	}
	status, code := "ok", http.StatusOK
	for _, name := range []string{"agent", "store"} {
		if b := backends[name]; b.Reachable != nil && !*b.Reachable {
			status, code = "degraded", http.StatusServiceUnavailable
		}
	}
	writeJSON(w, code, map[string]any{"status": status, "backends": backends})
}

// kinder is implemented by backends that name what they are (sqlite,
// cosmos, ...).
type kinder interface{ Kind() string }

func kindOf(b any) string {
	if k, ok := b.(kinder); ok {
		return k.Kind()
	}
	return ""
}
