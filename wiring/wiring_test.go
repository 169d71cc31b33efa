package wiring_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/wiring"
)

// The server's own settings are given once, in Server; New refuses what
// it must wire itself, and joins what the caller wraps to what it adds.
func TestNewTakesTheServerConfig(t *testing.T) {
	st := openStore(t)
	agent := wiring.Foundry("http://127.0.0.1:1/api/projects/p", "asst_1", "v1", nil)
	opened, err := agent(http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]wiring.Config{
		"no agent":         {Server: server.Config{Keys: server.Keys{phoneKey: "alice"}, Store: st}},
		"no store":         {Server: server.Config{Keys: server.Keys{phoneKey: "alice"}}, Agent: agent},
		"provider given":   {Server: server.Config{Keys: server.Keys{phoneKey: "alice"}, Store: st, Provider: opened}, Agent: agent},
		"no keys (server)": {Server: server.Config{Store: st}, Agent: agent},
	} {
		if _, err := wiring.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}

	srv, err := wiring.New(wiring.Config{
		Server: server.Config{
			Keys:  server.Keys{phoneKey: "alice"},
			Store: st,
			Middleware: func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("X-Wrapped", "yes")
					next.ServeHTTP(w, r)
				})
			},
		},
		Agent: agent,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/inbox", nil))
	if rec.Code != http.StatusUnauthorized || rec.Header().Get("X-Wrapped") != "yes" {
		t.Fatalf("unauthenticated request: %d, X-Wrapped %q; want 401 through Server.Middleware", rec.Code, rec.Header().Get("X-Wrapped"))
	}
}

// openStore opens a new SQLite store for the test.
func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "brainwire.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
