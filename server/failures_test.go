package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/syncbuf"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/sqlite"
)

// brokenStore fails the way a store with a bug or a misconfigured
// database does: with errors that carry no application code, or a panic.
type brokenStore struct{ *sqlite.Store }

func (brokenStore) ListInbox(context.Context, string, brainwire.ListOptions) (brainwire.InboxPage, error) {
	return brainwire.InboxPage{}, errors.New("cosmos: listing inbox: 400 BadRequest: no composite index for the ORDER BY")
}

func (brokenStore) GetInboxItem(context.Context, string, string) (brainwire.InboxItem, error) {
	panic("nil map in the item decoder")
}

func (brokenStore) DeleteInboxItem(context.Context, string, string) error {
	return brainwire.Errorf(brainwire.EUnavailable, "the store is unavailable")
}

// Every 5xx is logged with its cause and the user the request acted for,
// whichever route answered it; the client still gets only the generic
// message.
func TestServerErrorsAreLoggedWithTheirCause(t *testing.T) {
	logs := &syncbuf.Buffer{}
	s, err := server.New(server.Config{Keys: server.Keys{testKey: testUser}, Provider: idleProvider{},
		Store: brokenStore{openSQLite(t)}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	h := &harness{t: t, srv: srv}
	for _, c := range []struct {
		method, path string
		status       int
		detail, log  string
	}{
		{"GET", "/api/inbox", 500, "internal error", "no composite index for the ORDER BY"},
		{"GET", "/api/inbox/x1", 500, "internal error", "nil map in the item decoder"},
		{"DELETE", "/api/inbox/x1", 503, "the store is unavailable", "the store is unavailable"},
	} {
		mark := len(logs.String())
		r := h.do(c.method, c.path, testKey, "bearer", "", "")
		if r.status != c.status || r.detail != c.detail {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
		l := logs.String()[mark:]
		if !strings.Contains(l, "request failed") || !strings.Contains(l, "path="+c.path) || !strings.Contains(l, c.log) ||
			!strings.Contains(l, "user="+testUser) {
			t.Errorf("%s %s: the failure is not logged with its cause and user:\n%s", c.method, c.path, l)
		}
		if strings.Contains(r.body, c.log) && c.status == http.StatusInternalServerError {
			t.Errorf("%s %s: the cause leaked to the client: %s", c.method, c.path, r.body)
		}
	}
	// 4xx answers are the client's business, not the log's.
	mark := len(logs.String())
	if r := h.do("GET", "/api/inbox?limit=0", testKey, "bearer", "", ""); r.status != http.StatusBadRequest {
		t.Fatalf("limit=0: %d", r.status)
	}
	if l := logs.String()[mark:]; strings.Contains(l, "request failed") {
		t.Errorf("a 400 was logged as a failure:\n%s", l)
	}
}

// The answers net/http gives before any handler runs, which the README
// says are not logged: neither the API nor the server's error log ever
// sees these requests. If this ever fails, net/http lets them through and
// they can be logged as every other 5xx is.
func TestAnswersNetHTTPGivesNeverReachTheAPI(t *testing.T) {
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	s, err := server.New(server.Config{Keys: server.Keys{testKey: testUser}, Provider: idleProvider{},
		Store: openSQLite(t), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	var reached atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		s.Handler().ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	srv.Start()
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		name, request string
		status        int
	}{
		{"unknown transfer coding", "POST /api/capture HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", http.StatusNotImplemented},
		{"HTTP/3.0 over HTTP/1", "GET /api/inbox HTTP/3.0\r\nHost: x\r\n\r\n", http.StatusHTTPVersionNotSupported},
	} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(conn, c.request)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
	if n := reached.Load(); n != 0 || logs.String() != "" {
		t.Errorf("net/http's own answers reached the handler %d times; logged %q", n, logs.String())
	}
}
