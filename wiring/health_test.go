package wiring_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk/adktest"
	"github.com/brainwire/brainwire/foundry"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/internal/scripttest"
	"github.com/brainwire/brainwire/responses"
	rt "github.com/brainwire/brainwire/responses/responsestest"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/wiring"
)

// healthReport is /health's answer, as far as the agent goes.
type healthReport struct {
	Status   string `json:"status"`
	Backends struct {
		Agent struct {
			Configured bool   `json:"configured"`
			Kind       string `json:"kind"`
			Reachable  *bool  `json:"reachable"`
			Failed     string `json:"failed"`
		} `json:"agent"`
	} `json:"backends"`
}

func getHealth(t *testing.T, agent func(http.RoundTripper) (brainwire.Provider, error)) (int, healthReport) {
	t.Helper()
	phone := phoneServer(t, agent)
	resp, err := phone.Client().Get(phone.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep healthReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, rep
}

// healthMode is one way of naming the agent, and how its stand-in answers
// the health check's one call.
type healthMode struct {
	name string
	// open starts a stand-in that answers the probe with answers in turn (none: no
	// call may come) and opens the agent on it, signed in with auth (nil:
	// the mode's own, which works); a stopped stand-in when stopped.
	open        func(t *testing.T, answers []scripttest.Response, stopped bool, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error)
	ok, refused scripttest.Response
	unknown     []scripttest.Response // the answers of a service that does not know the agent
	entra       bool                  // signed in with Entra ID tokens
	described   bool                  // the agent's description is fetched with the probe's call
}

func healthModes() []healthMode {
	defined := responses.Agent{Model: "gpt-5-mini", Instructions: "You are the Classifier."}
	apiKey := func(next http.RoundTripper) http.RoundTripper {
		return responses.NewAPIKeyTransport("sk-test", "", next)
	}
	or := func(auth, def func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) http.RoundTripper {
		if auth != nil {
			return auth
		}
		return def
	}
	responsesUp := func(t *testing.T, call string, answers []scripttest.Response, stopped bool) (base, project string) {
		if stopped {
			project = stoppedURL(t) + rt.ProjectPath
			return responses.ProjectBaseURL(project), project
		}
		up := rt.NewServer(t)
		for _, a := range answers {
			up.Script(rt.Expect(call, a))
		}
		return up.BaseURL(), up.Project()
	}
	return []healthMode{
		{
			name: "Foundry project, model deployment",
			open: func(t *testing.T, answers []scripttest.Response, stopped bool, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
				base, project := responsesUp(t, "GET /deployments/gpt-5-mini", answers, stopped)
				return wiring.Responses(base, project, defined, or(auth, staticAuth), responses.WithName(responses.ProviderNameFoundry))
			},
			ok:      rt.Deployment("gpt-5-mini", "gpt-5-mini"),
			refused: rt.Error(http.StatusUnauthorized, "PermissionDenied", "The principal lacks the required data action."),
			unknown: []scripttest.Response{rt.Error(http.StatusNotFound, "DeploymentNotFound", "Deployment gpt-5-mini not found.")},
			entra:   true,
		},
		{
			name: "OpenAI-compatible endpoint, model",
			open: func(t *testing.T, answers []scripttest.Response, stopped bool, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
				base, _ := responsesUp(t, "GET /models/gpt-5-mini", answers, stopped)
				return wiring.Responses(base, "", defined, or(auth, apiKey), responses.WithChaining(responses.ChainPreviousResponse))
			},
			ok:      rt.Model("gpt-5-mini"),
			refused: rt.Error(http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided."),
			unknown: []scripttest.Response{rt.Error(http.StatusNotFound, "model_not_found", "The model `gpt-5-mini` does not exist or you do not have access to it.")},
		},
		{
			name: "Foundry agent by name",
			open: func(t *testing.T, answers []scripttest.Response, stopped bool, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
				base, project := responsesUp(t, "GET /agents/classifier", answers, stopped)
				return wiring.Responses(base, project, responses.Agent{Name: "classifier"}, or(auth, staticAuth), responses.WithName(responses.ProviderNameFoundry))
			},
			ok: rt.JSON(http.StatusOK, `{"object":"agent","id":"classifier","name":"classifier","versions":{"latest":{"object":"agent.version",`+
				`"id":"classifier:2","name":"classifier","version":"2","definition":{"kind":"prompt","model":"gpt-5-mini","instructions":"Classify."}}}}`),
			refused:   rt.Error(http.StatusUnauthorized, "PermissionDenied", "The principal lacks the required data action."),
			unknown:   []scripttest.Response{rt.Error(http.StatusNotFound, "not_found", "Agent classifier not found.")},
			entra:     true,
			described: true,
		},
		{
			name: "classic agent (threads/runs)",
			open: func(t *testing.T, answers []scripttest.Response, stopped bool, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
				endpoint := stoppedURL(t) + ft.ProjectPath
				if !stopped {
					up := ft.NewServer(t)
					for _, a := range answers {
						up.Script(ft.Expect("GET /assistants/asst_1", a))
					}
					endpoint = up.Endpoint()
				}
				return wiring.Foundry(endpoint, "asst_1", foundry.DefaultAPIVersion, or(auth, staticAuth))
			},
			ok: ft.JSON(http.StatusOK, `{"id":"asst_1","object":"assistant","created_at":1741290958,"name":"Classifier","model":"gpt-4o",`+
				`"instructions":"Classify.","tools":[],"metadata":{}}`),
			refused:   ft.Error(http.StatusUnauthorized, "PermissionDenied", "The principal lacks the required data action."),
			unknown:   []scripttest.Response{ft.Error(http.StatusNotFound, "not_found", "No assistant found with id 'asst_1'.")},
			entra:     true,
			described: true,
		},
		{
			name: "ADK app",
			open: func(t *testing.T, answers []scripttest.Response, stopped bool, auth func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) (brainwire.Provider, error) {
				base := stoppedURL(t)
				if !stopped {
					up := adktest.NewServer(t)
					for _, a := range answers {
						up.Script(adktest.Expect("GET /list-apps", a))
					}
					base = up.URL()
				}
				return wiring.ADK(base, "classifier", auth)
			},
			ok: adktest.Apps("classifier", "other_agent"),
			// A proxy in front of the server refuses the header.
			refused: adktest.Detail(http.StatusForbidden, "Not authenticated"),
			// An ADK API server that answers /list-apps with 404 does
			// not know the app either, whether the 404 is FastAPI's (a
			// Python server at another path) or Express's page (the
			// TypeScript one).
			unknown: []scripttest.Response{adktest.Apps("other_agent"), adktest.Detail(http.StatusNotFound, "Not Found"),
				adktest.Raw(http.StatusNotFound, "text/html; charset=utf-8",
					"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Error</title>\n</head>\n<body>\n<pre>Cannot GET /list-apps</pre>\n</body>\n</html>\n")},
		},
	}
}

// TestHealthReachesTheAgentService: for every way of naming the agent,
// /health asks the agent service, and says which check failed: the service
// not there, brainwire's credential refused or not to be had, the agent
// (deployment, model, app) unknown, the service answering otherwise (busy,
// 429: a service that answers).
func TestHealthReachesTheAgentService(t *testing.T) {
	busy := refused(http.StatusTooManyRequests)
	for _, m := range healthModes() {
		t.Run(m.name, func(t *testing.T) {
			type healthCase struct {
				name    string
				answer  *scripttest.Response
				stopped bool
				auth    func(http.RoundTripper) http.RoundTripper
				failed  string // "": healthy
			}
			cases := []healthCase{
				{"the service answers", &m.ok, false, nil, ""},
				{"the service stopped", nil, true, nil, "unreachable"},
				{"the credential refused", &m.refused, false, nil, "credentials"},
				{"the service busy", &busy, false, nil, "upstream"},
			}
			for i := range m.unknown {
				cases = append(cases, healthCase{fmt.Sprintf("the agent unknown %d", i+1), &m.unknown[i], false, nil, "not_found"})
			}
			if m.entra {
				cases = append(cases, healthCase{"no token to be had", nil, false, entraAuth(noCredential{}), "credentials"})
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					var answers []scripttest.Response
					if c.answer != nil {
						answers = append(answers, *c.answer)
					}
					status, rep := getHealth(t, m.open(t, answers, c.stopped, c.auth))
					a := rep.Backends.Agent
					if c.failed == "" {
						if status != http.StatusOK || rep.Status != "ok" || a.Reachable == nil || !*a.Reachable || a.Failed != "" {
							t.Fatalf("health %d %+v", status, rep)
						}
						return
					}
					if status != http.StatusServiceUnavailable || rep.Status != "degraded" || a.Reachable == nil || *a.Reachable || a.Failed != c.failed {
						t.Fatalf("health %d %+v, want 503 with the agent failed: %s", status, rep, c.failed)
					}
				})
			}
		})
	}
}

// opNames records the operation each call to the agent service is named
// by on its context.
type opNames struct {
	next  http.RoundTripper
	mu    sync.Mutex
	names []string
}

func (o *opNames) RoundTrip(req *http.Request) (*http.Response, error) {
	op, _ := brainwire.OperationFrom(req.Context())
	o.mu.Lock()
	o.names = append(o.names, op.Name)
	o.mu.Unlock()
	return o.next.RoundTrip(req)
}

// TestHealthProbesAreNamed: what the health check asks the agent service
// is named health_probe on the request's context, whatever the call, so
// that a layer that retries calls can tell it; a capture's calls keep
// their own names.
func TestHealthProbesAreNamed(t *testing.T) {
	up := rt.NewServer(t,
		rt.Expect("GET /agents/classifier", rt.JSON(http.StatusOK, `{"object":"agent","id":"classifier","name":"classifier","versions":{"latest":{"version":"2"}}}`)),
		rt.Expect("POST /conversations", rt.Error(http.StatusInternalServerError, "server_error", "try later")),
	)
	ops := &opNames{next: up.Client().Transport}
	phone := serveWired(t, wiring.Config{
		Agent:     wiring.Responses(up.BaseURL(), up.Project(), responses.Agent{Name: "classifier"}, staticAuth),
		Transport: ops,
	})
	resp, err := phone.Client().Get(phone.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	postStream(t, phone, "/api/capture", `{"text":"Call Sam"}`)
	if got := strings.Join(ops.names, " "); resp.StatusCode != http.StatusOK || got != brainwire.OpHealthProbe+" "+responses.OpCreateConversation {
		t.Fatalf("health %d; calls named %q", resp.StatusCode, got)
	}
}

// counted counts the requests sent to the agent service.
type counted struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *counted) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// TestHealthAsksOnceWhileDescriptionsAreRetried: with retries on, the
// health check's call to the agent service is sent once even when refused
// for a moment, since /health reports what it sees; the agent's
// description, which every capture's version and an evaluation depend on,
// is asked again, so that a busy service at start does not leave captures
// without a version until the next refresh.
func TestHealthAsksOnceWhileDescriptionsAreRetried(t *testing.T) {
	busy := refused(http.StatusTooManyRequests)
	for _, m := range healthModes() {
		t.Run(m.name, func(t *testing.T) {
			wire := func(answers ...scripttest.Response) (*server.Server, *counted) {
				calls := &counted{next: http.DefaultTransport}
				srv := wire(t, wiring.Config{
					Agent:     m.open(t, answers, false, nil),
					Retry:     fastRetries,
					Transport: calls,
				})
				return srv, calls
			}
			srv, calls := wire(busy)
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
			if rec.Code != http.StatusServiceUnavailable || calls.n.Load() != 1 {
				t.Fatalf("health refused for a moment: %d after %d calls, want 503 after 1\n%s", rec.Code, calls.n.Load(), rec.Body)
			}
			if !m.described {
				return
			}
			srv, calls = wire(busy, m.ok)
			info, err := srv.RefreshAgent(t.Context())
			if n := calls.n.Load(); err != nil || info.Version == "" || n != 2 {
				t.Fatalf("the agent described as %q (%v) after %d calls, want a version after 2", info.Version, err, n)
			}
		})
	}
}
