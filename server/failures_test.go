package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
