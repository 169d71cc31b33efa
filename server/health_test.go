package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/syncbuf"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/sqlite"
)

// idleProvider is an agent that is always reachable and never asked to run.
type idleProvider struct{}

func (idleProvider) Name() string                   { return "test" }
func (idleProvider) Ping(ctx context.Context) error { return nil }
func (idleProvider) Start(context.Context, brainwire.RunRequest) (brainwire.Run, error) {
	return nil, brainwire.Errorf(brainwire.EUpstream, "not expected to run")
}

// gatedStore is a SQLite store whose Ping waits until the test opens the
// gate (or the ping's context ends), like a store that answers slowly.
type gatedStore struct {
	*sqlite.Store
	started chan struct{} // receives once per ping
	gate    chan struct{}
	pings   atomic.Int64
	ctxErrs atomic.Int64 // pings that ended with their context
}

func (g *gatedStore) Ping(ctx context.Context) error {
	g.pings.Add(1)
	g.started <- struct{}{}
	select {
	case <-g.gate:
		return g.Store.Ping(ctx)
	case <-ctx.Done():
		g.ctxErrs.Add(1)
		return fmt.Errorf("sqlite: ping: %w", ctx.Err())
	}
}

// gatedHealth is a server of an idle agent and a gated store, for tests of
// its health checks.
func gatedHealth(t *testing.T, logger *slog.Logger) (*gatedStore, http.Handler) {
	t.Helper()
	store := &gatedStore{Store: openSQLite(t), started: make(chan struct{}, 64), gate: make(chan struct{})}
	s, err := server.New(server.Config{Keys: server.Keys{testKey: testUser}, Provider: idleProvider{}, Store: store, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return store, s.Handler()
}

func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "brainwire.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A probe that sends GET /health and hangs up while the check runs must
// not decide what the next probes see: the check finishes on the
// server's own context, and the next probe gets its (healthy) answer.
func TestHealthCannotBePoisonedByAProbeThatHangsUp(t *testing.T) {
	store, h := gatedHealth(t, nil)
	srv := httptest.NewUnstartedServer(h)
	closed := make(chan struct{}, 8)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: probe\r\n\r\n")
	waitFor(t, store.started, "the health check to start")
	conn.(*net.TCPConn).SetLinger(0) // a reset, as a killed probe sends
	conn.Close()
	waitFor(t, closed, "the server to see the probe hang up")
	close(store.gate)

	resp, err := srv.Client().Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("health after a probe hung up: %d %s", resp.StatusCode, body)
	}
	if n := store.ctxErrs.Load(); n != 0 {
		t.Errorf("%d store pings were cut short by a probe's context", n)
	}
}

// Many probes at once share one check, and a check has a deadline of its
// own even when no probe has one.
func TestHealthChecksOnceForConcurrentProbes(t *testing.T) {
	store, h := gatedHealth(t, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	const probes = 20
	var wg sync.WaitGroup
	codes := make(chan int, probes)
	for range probes {
		wg.Go(func() {
			resp, err := srv.Client().Get(srv.URL + "/health")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	waitFor(t, store.started, "the health check to start")
	close(store.gate)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("probe got %d", c)
		}
	}
	if n := store.pings.Load(); n != 1 {
		t.Errorf("%d store pings for %d concurrent probes, want 1", n, probes)
	}
}

// A store that never answers makes the check fail by its own deadline,
// not hang the probes; the 503 is logged with its cause.
func TestHealthCheckHasItsOwnDeadline(t *testing.T) {
	logs := &syncbuf.Buffer{}
	_, h := gatedHealth(t, slog.New(slog.NewTextHandler(logs, nil)))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	start := time.Now()
	resp, err := srv.Client().Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Status   string
		Backends map[string]struct{ Reachable *bool }
	}
	_ = json.NewDecoder(resp.Body).Decode(&rep)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || rep.Status != "degraded" ||
		rep.Backends["store"].Reachable == nil || *rep.Backends["store"].Reachable {
		t.Fatalf("health with a silent store: %d %+v", resp.StatusCode, rep)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the probe waited %v", d)
	}
	l := logs.String()
	if !strings.Contains(l, "request failed") || !strings.Contains(l, "status=503") || !strings.Contains(l, "deadline exceeded") {
		t.Errorf("the 503 is not logged with its cause:\n%s", l)
	}
}

func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
