package wiring_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/responses"
	rt "github.com/brainwire/brainwire/responses/responsestest"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/wiring"
)

// noCredential is a token source that has no token to give, as
// DefaultAzureCredential where no identity is configured.
type noCredential struct{}

func (noCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{}, errors.New("DefaultAzureCredential: failed to acquire a token")
}

// entraAuth signs requests with tokens from cred, as serve does with
// DefaultAzureCredential.
func entraAuth(cred azcore.TokenCredential) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper { return foundry.NewTokenTransport(cred, next) }
}

// staticAuth signs requests with a fixed token.
func staticAuth(next http.RoundTripper) http.RoundTripper {
	return foundry.NewStaticTokenTransport("entra-token", next)
}

// stoppedURL is the URL of a server that is no longer there.
func stoppedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// phoneServer wires a capture server over agent and serves its API.
func phoneServer(t *testing.T, agent func(http.RoundTripper) (brainwire.Provider, error)) *httptest.Server {
	t.Helper()
	return phoneOn(t, openStore(t), agent, retry.Policy{}, 0)
}

// phoneOn wires a capture server over agent and st, sending refused calls
// again by retries, and serves its API (serveWired). runTimeout 0 is the
// server's default.
func phoneOn(t *testing.T, st *sqlite.Store, agent func(http.RoundTripper) (brainwire.Provider, error), retries retry.Policy, runTimeout time.Duration) *httptest.Server {
	t.Helper()
	return serveWired(t, wiring.Config{Server: server.Config{Store: st, RunTimeout: runTimeout}, Agent: agent, Retry: retries})
}

// wire is wiring.New on cfg, what its server leaves unset filled in for a
// test: phoneKey's user alice, a new store, no keep-alives, ids in
// sequence and a fixed clock (so that two servers' streams compare byte
// for byte).
func wire(t *testing.T, cfg wiring.Config) *server.Server {
	t.Helper()
	sc := &cfg.Server
	if sc.Keys == nil {
		sc.Keys = server.Keys{phoneKey: "alice"}
	}
	if sc.Store == nil {
		sc.Store = openStore(t)
	}
	if sc.KeepAlive == 0 {
		sc.KeepAlive = -1
	}
	if sc.NewID == nil {
		var n atomic.Int64
		sc.NewID = func() string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n.Add(1)) }
	}
	if sc.Now == nil {
		sc.Now = func() time.Time { return phoneNow }
	}
	srv, err := wiring.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// serveWired serves the API of wire's server until the test ends.
func serveWired(t *testing.T, cfg wiring.Config) *httptest.Server {
	t.Helper()
	phone := httptest.NewServer(wire(t, cfg).Handler())
	t.Cleanup(phone.Close)
	return phone
}

// phoneNow is the phone servers' clock.
var phoneNow = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// postStream posts a JSON body to path as the phone and returns the
// stream.
func postStream(t *testing.T, phone *httptest.Server, path, body string) string {
	t.Helper()
	return postAs(t, phone, path, "application/json", []byte(body))
}

// postAs posts body of type ctype to path as the phone and returns the
// stream, failing the test on any status but 200.
func postAs(t *testing.T, phone *httptest.Server, path, ctype string, body []byte) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, phone.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+phoneKey)
	req.Header.Set("Content-Type", ctype)
	resp, err := phone.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// TestSignInFailureReachesThePhone: when brainwire cannot sign in to the
// agent service (no token to be had, or the service refuses the one sent)
// the phone is told so, with its own message and code, in every protocol,
// and not that the service could not be reached; a service that is not
// there still reads as unreachable.
func TestSignInFailureReachesThePhone(t *testing.T) {
	const (
		signIn      = "brainwire could not sign in to the agent service"
		unreachable = "The agent service could not be reached"
	)
	agent := responses.Agent{Model: "gpt-5-mini", Instructions: "You are the Classifier."}
	cases := []struct {
		name          string
		open          func(t *testing.T) func(http.RoundTripper) (brainwire.Provider, error)
		message, code string
	}{
		{"no token to be had", func(t *testing.T) func(http.RoundTripper) (brainwire.Provider, error) {
			up := rt.NewServer(t) // no call may come: the request is never sent
			return wiring.Responses(up.BaseURL(), up.Project(), agent, entraAuth(noCredential{}))
		}, signIn, "upstream_auth"},
		{"the token refused (401)", func(t *testing.T) func(http.RoundTripper) (brainwire.Provider, error) {
			refused := rt.Error(http.StatusUnauthorized, "PermissionDenied", "The principal lacks the required data action.")
			up := rt.NewServer(t, rt.Expect("POST /conversations", refused), rt.Expect("POST /conversations", refused),
				rt.Expect("POST /conversations", refused))
			return wiring.Responses(up.BaseURL(), up.Project(), agent, staticAuth)
		}, signIn, "upstream_auth"},
		{"the service not there", func(t *testing.T) func(http.RoundTripper) (brainwire.Provider, error) {
			project := stoppedURL(t) + rt.ProjectPath
			return wiring.Responses(responses.ProjectBaseURL(project), project, agent, staticAuth)
		}, unreachable, "unavailable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			phone := phoneServer(t, c.open(t))
			for _, p := range protocols {
				if got, want := postStream(t, phone, p.path, p.body), p.errorFrame(c.message, c.code, ""); !strings.Contains(got, want) {
					t.Errorf("%s:\n%s\nwant %s", p.name, got, want)
				}
			}
		})
	}
}
