package foundry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

type fakeCredential struct {
	calls    atomic.Int32
	lifetime time.Duration
	now      func() time.Time
	delay    time.Duration
	err      error
}

func (f *fakeCredential) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	n := f.calls.Add(1)
	if len(opts.Scopes) != 1 || opts.Scopes[0] != Scope {
		return azcore.AccessToken{}, errors.New("wrong scopes")
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return azcore.AccessToken{}, ctx.Err()
		}
	}
	if f.err != nil {
		return azcore.AccessToken{}, f.err
	}
	return azcore.AccessToken{Token: "tok-" + string(rune('0'+n)), ExpiresOn: f.now().Add(f.lifetime)}, nil
}

func TestTokenTransportConcurrent(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("Authorization")]++
		mu.Unlock()
	}))
	defer srv.Close()

	cred := &fakeCredential{lifetime: time.Hour, now: time.Now, delay: 50 * time.Millisecond}
	hc := &http.Client{Transport: NewTokenTransport(cred, srv.Client().Transport)}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
			resp, err := hc.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if req.Header.Get("Authorization") != "" {
				t.Error("the caller's request was modified")
			}
		})
	}
	wg.Wait()
	if n := cred.calls.Load(); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
	if seen["Bearer tok-1"] != 20 {
		t.Fatalf("headers seen %v", seen)
	}
}

func TestTokenCacheRefresh(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	cred := &fakeCredential{lifetime: time.Hour, now: clock}
	c := &tokenCache{cred: cred, now: clock}
	get := func() string {
		tok, err := c.get(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if get() != "tok-1" {
		t.Fatal("first token")
	}
	now = now.Add(54 * time.Minute)
	if get() != "tok-1" || cred.calls.Load() != 1 {
		t.Fatal("token refreshed too early")
	}
	now = now.Add(2 * time.Minute) // 4 minutes before expiry
	if get() != "tok-2" {
		t.Fatal("token not refreshed before expiry")
	}
	// A suggested refresh time earlier than that is honoured.
	c.tok.RefreshOn = now.Add(10 * time.Minute)
	now = now.Add(11 * time.Minute)
	if get() != "tok-3" {
		t.Fatal("RefreshOn ignored")
	}
}

// A token that cannot be had fails the request with why (the transport
// makes it a failed sign-in: agenthttp.NewHeaderFuncTransport), and is
// not cached: the next request asks again.
func TestTokenCacheError(t *testing.T) {
	cred := &fakeCredential{err: errors.New("no credentials configured"), now: time.Now}
	c := &tokenCache{cred: cred, now: time.Now}
	if _, err := c.get(t.Context()); err == nil || !strings.Contains(err.Error(), "no credentials configured") || !strings.Contains(err.Error(), Scope) {
		t.Fatalf("got %v", err)
	}
	cred.err = nil
	if tok, err := c.get(t.Context()); err != nil || tok != "tok-2" {
		t.Fatalf("got %q, %v; want a token asked for anew", tok, err)
	}
}

func TestTokenCacheWaiterCancelled(t *testing.T) {
	cred := &fakeCredential{lifetime: time.Hour, now: time.Now, delay: time.Second}
	c := &tokenCache{cred: cred, now: time.Now}
	go c.get(t.Context()) // holds the refresh
	time.Sleep(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
}
