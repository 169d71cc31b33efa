package wiring_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk/adktest"
	"github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/internal/scripttest"
	"github.com/brainwire/brainwire/responses"
	rt "github.com/brainwire/brainwire/responses/responsestest"
	"github.com/brainwire/brainwire/wiring"
)

const filed = `{"text":"Call Sarah about the offsite","bucket":"People","confidence":0.9,"status":"classified","title":"Sarah"}`

// upstream is one agent service's stand-in, for a capture that files
// one item: its calls in order, and how the server reaches it.
type upstream struct {
	name  string
	calls []scripttest.Call
	serve serveStandIn
}

// serveStandIn starts an agent service's stand-in with script and returns
// the agent on it and the requests it received.
type serveStandIn func(t *testing.T, script []scripttest.Call) (func(http.RoundTripper) (brainwire.Provider, error), func() []scripttest.Request)

func serveResponses(t *testing.T, script []scripttest.Call) (func(http.RoundTripper) (brainwire.Provider, error), func() []scripttest.Request) {
	up := rt.NewServer(t, script...)
	return wiring.Responses(up.BaseURL(), up.Project(), responses.Agent{Model: "gpt-5-mini", Instructions: "Classify."}, nil), up.Requests
}

func serveClassic(t *testing.T, script []scripttest.Call) (func(http.RoundTripper) (brainwire.Provider, error), func() []scripttest.Request) {
	up := foundrytest.NewServer(t, script...)
	return wiring.Foundry(up.Endpoint(), "asst_test", "", nil), up.Requests
}

func serveADK(t *testing.T, script []scripttest.Call) (func(http.RoundTripper) (brainwire.Provider, error), func() []scripttest.Request) {
	up := adktest.NewServer(t, script...)
	return wiring.ADK(up.URL(), "classifier", nil), up.Requests
}

func upstreams() []upstream {
	run := foundrytest.NewClassify("thread_1", "run_1", 3)
	run.Call = foundrytest.FileCaptureCall("call_file_1", "Call Sarah about the offsite", "People", 0.9, "classified")
	conv := rt.InConversation("conv_1")
	classify := adktest.Turn{InvocationID: "e-1", EventID: "ev-1", Thoughts: []string{"It names Sarah."},
		Calls: []adktest.FunctionCall{{ID: "adk-1", Name: "file_capture", Args: filed}}}
	confirm := adktest.Turn{InvocationID: "e-1", EventID: "ev-2", Texts: []string{"Filed."}}
	return []upstream{
		{
			name: "responses",
			calls: []scripttest.Call{
				rt.Expect("POST /conversations", rt.JSON(200, `{"id":"conv_1","object":"conversation","created_at":1741290958,"metadata":{}}`)),
				rt.Expect("POST /responses", rt.Stream(rt.NewTurn("resp_1", conv).Reasoning("rs_1", "It names ", "Sarah.").
					FunctionCall("fc_1", "call_1", "file_capture", filed).Complete(rt.Usage{Input: 300, Output: 80}).Events()...)),
				rt.Expect("POST /responses", rt.Stream(rt.NewTurn("resp_2", conv, rt.After("resp_1")).Message("msg_2", "Filed.").
					Complete(rt.Usage{Input: 400, Output: 8}).Events()...)),
			},
			serve: serveResponses,
		},
		{
			name:  "classic",
			calls: run.Script(),
			serve: serveClassic,
		},
		{
			name: "adk",
			calls: []scripttest.Call{
				adktest.Expect("POST /apps/{app}/users/{user}/sessions", adktest.JSON(200, adktest.Session("s-1", "classifier", "alice"))),
				adktest.Expect("POST /run_sse", adktest.Stream(classify.Frames()...)),
				adktest.Expect("POST /run_sse", adktest.Stream(confirm.Frames()...)),
			},
			serve: serveADK,
		},
	}
}

// refused is the stand-in's answer refusing a call for a moment.
func refused(status int) scripttest.Response {
	return scripttest.JSON(status, `{"error":{"message":"Rate limit is exceeded.","type":"invalid_request_error","param":null,"code":"rate_limit_exceeded"}}`).
		WithHeader("retry-after-ms", "1")
}

// phoneCapture runs one typed capture through wiring.New with policy
// against agent and returns the phone's SSE bytes.
func phoneCapture(t *testing.T, agent func(http.RoundTripper) (brainwire.Provider, error), policy retry.Policy, runTimeout time.Duration) string {
	t.Helper()
	phone := phoneOn(t, openStore(t), agent, policy, runTimeout)
	return postStream(t, phone, "/api/capture", `{"text":"Call Sarah about the offsite","thread_id":"t-1","run_id":"r-1"}`)
}

var fastRetries = retry.Policy{Retries: 2, Backoff: time.Millisecond}

// TestARefusedCallIsInvisibleToThePhone refuses each call of a capture
// once (429 asking for a wait, 503 without) and checks the phone gets the
// same bytes as without the refusal, and the call was sent again with
// the same body and Idempotency-Key.
func TestARefusedCallIsInvisibleToThePhone(t *testing.T) {
	for _, u := range upstreams() {
		t.Run(u.name, func(t *testing.T) {
			agent, _ := u.serve(t, u.calls)
			want := phoneCapture(t, agent, fastRetries, 0)
			if !strings.Contains(want, `"type":"CLASSIFIED"`) {
				t.Fatalf("the capture without faults:\n%s", want)
			}
			for i, call := range u.calls {
				for _, status := range []int{429, 503} {
					t.Run(fmt.Sprintf("%s %d", call, status), func(t *testing.T) {
						script := append([]scripttest.Call{}, u.calls[:i]...)
						script = append(script, scripttest.Call{Method: call.Method, Path: call.Path, Response: refused(status)})
						script = append(script, u.calls[i:]...)
						agent, requests := u.serve(t, script)
						if got := phoneCapture(t, agent, fastRetries, 0); got != want {
							t.Fatalf("the phone got:\n%s\nwant, as without the refusal:\n%s", got, want)
						}
						reqs := requests()
						first, again := reqs[i], reqs[i+1]
						if first.String() != again.String() || !bytes.Equal(first.RawBody, again.RawBody) {
							t.Errorf("sent again %s %s; want %s %s", again, again.RawBody, first, first.RawBody)
						}
						if k := first.Header.Get("Idempotency-Key"); k == "" || again.Header.Get("Idempotency-Key") != k {
							t.Errorf("Idempotency-Key %q, then %q; want one value", k, again.Header.Get("Idempotency-Key"))
						}
					})
				}
			}
		})
	}
}

// TestARefusalThatOutlastsTheRetriesIsAnError refuses the first call
// every time: the phone gets ERROR with the code busy and how long the
// service asked to wait, then COMPLETE, after the call was sent
// 1 + Retries times.
func TestARefusalThatOutlastsTheRetriesIsAnError(t *testing.T) {
	for _, u := range upstreams() {
		t.Run(u.name, func(t *testing.T) {
			first := u.calls[0]
			refuse := scripttest.Call{Method: first.Method, Path: first.Path, Response: refused(429)}
			agent, requests := u.serve(t, []scripttest.Call{refuse, refuse, refuse})
			got := phoneCapture(t, agent, fastRetries, 0)
			want := `data: {"type":"COMPLETE","threadId":"t-1","runId":"r-1"}

`
			frames := strings.Split(strings.TrimSuffix(got, want), "\n\n")
			if !strings.HasSuffix(got, want) || len(frames) < 2 ||
				frames[len(frames)-2] != `data: {"type":"ERROR","message":"The agent service is busy; try again later","code":"busy","retryAfterSeconds":1}` {
				t.Errorf("the phone got:\n%s\nwant ERROR saying the service is busy, then COMPLETE", got)
			}
			if n := len(requests()); n != 3 {
				t.Errorf("sent %d times; want 3", n)
			}
		})
	}
}

// protocol is one of the three ways a client captures: its route, a
// capture's body, and the frame that tells it of an error.
type protocol struct{ name, path, body, errorType string }

var protocols = []protocol{
	{"capture-v2", "/api/capture", `{"text":"Call Sam"}`, "ERROR"},
	{"v1", "/api/ag-ui", `{"messages":[{"id":"m1","role":"user","content":"Call Sam"}]}`, "RUN_ERROR"},
	{"AG-UI", "/api/agui", `{"threadId":"t-1","runId":"r-1","state":{},` +
		`"messages":[{"id":"u1","role":"user","content":"Call Sam"}],"tools":[],"context":[],"forwardedProps":{}}`, "RUN_ERROR"},
}

// errorFrame is the frame telling p's client of an error with message
// and code, and how long the service asked to wait (retryAfter, "" for
// none): capture-v2 and v1 in a field of its own, AG-UI in its metadata
// (the AG-UI client drops a field of its own it does not know).
func (p protocol) errorFrame(message, code, retryAfter string) string {
	f := `data: {"type":"` + p.errorType + `","message":"` + message + `","code":"` + code + `"`
	switch {
	case retryAfter == "":
	case p.name == "AG-UI":
		f += `,"metadata":{"retryAfterSeconds":` + retryAfter + `}`
	default:
		f += `,"retryAfterSeconds":` + retryAfter
	}
	return f + "}\n\n"
}

// A refusal asking for a wait longer than the run has left is not waited
// for, on any service, for a capture's streamed calls too (their context
// outlives the capture to drain the stream, and carries its deadline):
// the client of every protocol hears at once that the service is busy,
// and for how long it asked, where it would have waited out the run
// timeout. An absurd hint is a long wait too, never a negative one sent
// again at once.
func TestARefusalAskingForLongerThanTheRunIsNotWaitedFor(t *testing.T) {
	const runTimeout = 20 * time.Second
	for _, u := range upstreams() {
		// The capture's first streamed call: its context lingers.
		i := slices.IndexFunc(u.calls, func(c scripttest.Call) bool {
			return strings.HasSuffix(c.Path, "/responses") || strings.HasSuffix(c.Path, "/threads/runs") || strings.HasSuffix(c.Path, "/run_sse")
		})
		for _, hint := range []struct{ header, value, seconds string }{
			{"Retry-After", "3600", "3600"},
			{"retry-after-ms", "90000", "90"},
			{"Retry-After", "99999999999", "86400"},
			{"retry-after-ms", "1e30", "86400"},
		} {
			t.Run(u.name+"/"+hint.header+" "+hint.value, func(t *testing.T) {
				refuse := scripttest.Call{Method: u.calls[i].Method, Path: u.calls[i].Path,
					Response: scripttest.JSON(429, `{"error":{"message":"Rate limit is exceeded.","code":"rate_limit_exceeded"}}`).WithHeader(hint.header, hint.value)}
				capture := append(slices.Clone(u.calls[:i]), refuse)
				var script []scripttest.Call
				for range protocols {
					script = append(script, capture...)
				}
				agent, requests := u.serve(t, script)
				phone := phoneOn(t, openStore(t), agent, retry.Policy{Retries: 2}, runTimeout)
				for n, p := range protocols {
					start := time.Now()
					got := postStream(t, phone, p.path, p.body)
					if took := time.Since(start); took > runTimeout/2 {
						t.Errorf("%s: the stream ended %v after it began; the run timeout is %v", p.name, took.Round(time.Millisecond), runTimeout)
					}
					if want := p.errorFrame("The agent service is busy; try again later", "busy", hint.seconds); !strings.Contains(got, want) {
						t.Errorf("%s: the client got:\n%s\nwant %s", p.name, got, want)
					}
					if sent, want := len(requests()), (n+1)*len(capture); sent != want {
						t.Errorf("%s: %d requests after %d captures; want %d, the refused call sent once each", p.name, sent, n+1, want)
					}
				}
			})
		}
	}
}

// TestAConnectionResetBeforeTheAnswerIsSentAgain resets the connection of
// a capture's first call before its answer, where what it creates is
// nothing a lookup could find (a conversation, a session). The classic
// first call, a thread and its run, is looked up:
// TestALostThreadAndRunIsUndone.
func TestAConnectionResetBeforeTheAnswerIsSentAgain(t *testing.T) {
	for _, u := range upstreams() {
		if u.name == "classic" {
			continue
		}
		t.Run(u.name, func(t *testing.T) {
			agent, _ := u.serve(t, u.calls)
			want := phoneCapture(t, agent, fastRetries, 0)
			first := u.calls[0]
			script := append([]scripttest.Call{{Method: first.Method, Path: first.Path, Response: scripttest.Reset()}}, u.calls...)
			agent, requests := u.serve(t, script)
			if got := phoneCapture(t, agent, fastRetries, 0); got != want {
				t.Fatalf("the phone got:\n%s\nwant:\n%s", got, want)
			}
			if n := len(requests()); n != len(u.calls)+1 {
				t.Errorf("%d requests; want %d", n, len(u.calls)+1)
			}
		})
	}
}

// TestLostToolOutputsAreLookedUp resets the connection of a classic
// run's submit_tool_outputs after the request went out: the run is asked
// for, and the outputs are sent again only when it still waits for them.
func TestLostToolOutputsAreLookedUp(t *testing.T) {
	run := foundrytest.NewClassify("thread_1", "run_1", 3)
	run.Call = foundrytest.FileCaptureCall("call_file_1", "Call Sarah about the offsite", "People", 0.9, "classified")
	script := run.Script()
	submit := script[1]
	lost := scripttest.Call{Method: submit.Method, Path: submit.Path, Response: scripttest.Reset()}
	getRun := "GET /threads/thread_1/runs/run_1"

	up := foundrytest.NewServer(t, script...)
	want := phoneCapture(t, wiring.Foundry(up.Endpoint(), "asst_test", "", nil), fastRetries, 0)

	t.Run("still waiting: sent again", func(t *testing.T) {
		waiting := foundrytest.Expect(getRun, foundrytest.JSON(200, run.Run.RequiresAction(run.Call).Data))
		up := foundrytest.NewServer(t, script[0], lost, waiting, submit)
		if got := phoneCapture(t, wiring.Foundry(up.Endpoint(), "asst_test", "", nil), fastRetries, 0); got != want {
			t.Fatalf("the phone got:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("taken: not repeated", func(t *testing.T) {
		// The stand-in answers the run as in progress: the outputs were taken.
		up := foundrytest.NewServer(t, script[0], lost)
		// The capture was filed before the outputs went out: the phone
		// has its outcome either way.
		if got := phoneCapture(t, wiring.Foundry(up.Endpoint(), "asst_test", "", nil), fastRetries, 0); got != want {
			t.Errorf("the phone got:\n%s\nwant:\n%s", got, want)
		}
		if n := len(up.Find("POST /threads/{t}/runs/{r}/submit_tool_outputs")); n != 1 {
			t.Errorf("submitted %d times; want once", n)
		}
		if n := len(up.Find(getRun)); n < 1 {
			t.Errorf("the run was not looked up")
		}
	})
}
