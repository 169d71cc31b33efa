package wiring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk/adktest"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/internal/scripttest"
	"github.com/brainwire/brainwire/responses"
	rt "github.com/brainwire/brainwire/responses/responsestest"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/wiring"
)

const (
	askedText    = "Call Sarah"
	followUpText = "About the offsite"
	itemID       = "00000000-0000-4000-8000-000000000099"
)

// followUpUpstream is one agent service's stand-in for a follow-up on the
// conversation a misunderstood item holds: its calls without faults (the
// first creates on the conversation), and the lookup of a first call
// whose answer was lost, answered as the service does when it took the
// call and when it did not.
type followUpUpstream struct {
	name   string
	thread string
	calls  []scripttest.Call
	lookup string
	// taken answers the lookup from the first call's request, which the
	// service took; notTaken answers it as the conversation was before.
	taken    func(first scripttest.Request) scripttest.Response
	notTaken scripttest.Response
	serve    serveStandIn
}

func followUpUpstreams() []followUpUpstream {
	run := foundrytest.NewClassify("thread_old", "run_2", 3)
	run.Call = foundrytest.FileCaptureCall("call_file_1", "Call Sarah about the offsite", "People", 0.9, "classified")
	earlier := foundrytest.NewRun("thread_old", "run_1")
	conv := rt.InConversation("conv_1")
	classify := adktest.Turn{InvocationID: "e-2", EventID: "ev-3", Thoughts: []string{"It names Sarah."},
		Calls: []adktest.FunctionCall{{ID: "adk-2", Name: "file_capture", Args: filed}}}
	confirm := adktest.Turn{InvocationID: "e-2", EventID: "ev-4", Texts: []string{"Filed."}}
	return []followUpUpstream{
		{
			name:   "classic",
			thread: "thread_old",
			calls: []scripttest.Call{
				// On an existing thread no thread.created comes.
				foundrytest.Expect("POST /threads/thread_old/runs", foundrytest.Stream(run.Stream()[1:]...)),
				foundrytest.Expect("POST /threads/thread_old/runs/run_2/submit_tool_outputs", foundrytest.Stream(run.Continuation()...)),
			},
			lookup: "GET /threads/thread_old/runs",
			taken: func(first scripttest.Request) scripttest.Response {
				tagged := run.Run
				md, _ := first.Body["metadata"].(map[string]any)
				tagged.Metadata = map[string]string{foundry.MetadataCall: fmt.Sprint(md[foundry.MetadataCall])}
				return foundrytest.JSON(200, foundrytest.List(tagged.Object("in_progress"), earlier.Object("completed")))
			},
			notTaken: foundrytest.JSON(200, foundrytest.List(earlier.Object("completed"))),
			serve:    serveClassic,
		},
		{
			name:   "responses",
			thread: "conv_1",
			calls: []scripttest.Call{
				rt.Expect("POST /responses", rt.Stream(rt.NewTurn("resp_3", conv).Reasoning("rs_3", "It names ", "Sarah.").
					FunctionCall("fc_3", "call_3", "file_capture", filed).Complete(rt.Usage{Input: 300, Output: 80}).Events()...)),
				rt.Expect("POST /responses", rt.Stream(rt.NewTurn("resp_4", conv).Message("msg_4", "Filed.").
					Complete(rt.Usage{Input: 400, Output: 8}).Events()...)),
			},
			lookup: "GET /conversations/conv_1/items",
			taken: func(first scripttest.Request) scripttest.Response {
				// What the response added, newest first, over what was there.
				input, _ := first.Body["input"].([]any)
				var items []map[string]any
				for i := len(input) - 1; i >= 0; i-- {
					m, _ := input[i].(map[string]any)
					items = append(items, rt.InputMessageItem(fmt.Sprintf("msg_in_%d", i), fmt.Sprint(m["role"]), fmt.Sprint(m["content"])))
				}
				items = append(items, rt.OutputMessageItem("msg_2", "What about Sarah?"), rt.InputMessageItem("msg_1", "user", askedText))
				return rt.JSON(200, rt.ItemList(items...))
			},
			notTaken: rt.JSON(200, rt.ItemList(rt.OutputMessageItem("msg_2", "What about Sarah?"), rt.InputMessageItem("msg_1", "user", askedText))),
			serve:    serveResponses,
		},
		{
			name:   "adk",
			thread: "s-1",
			calls: []scripttest.Call{
				adktest.Expect("POST /run_sse", adktest.Stream(classify.Frames()...)),
				adktest.Expect("POST /run_sse", adktest.Stream(confirm.Frames()...)),
			},
			lookup: "GET /apps/classifier/users/alice/sessions/s-1",
			taken: func(scripttest.Request) scripttest.Response {
				return adktest.JSON(200, adktest.Session("s-1", "classifier", "alice",
					adktest.UserEvent("e-1", "ev-1", askedText), adktest.UserEvent("e-2", "ev-3", followUpText)))
			},
			notTaken: adktest.JSON(200, adktest.Session("s-1", "classifier", "alice", adktest.UserEvent("e-1", "ev-1", askedText))),
			serve:    serveADK,
		},
	}
}

// phoneFollowUp files a misunderstood item on thread, then answers it
// through wiring.New with policy against agent and returns the phone's
// SSE bytes.
func phoneFollowUp(t *testing.T, agent func(http.RoundTripper) (brainwire.Provider, error), policy retry.Policy, thread string) string {
	t.Helper()
	ctx := context.Background()
	st := openStore(t)
	now := phoneNow
	if _, err := st.File(ctx, brainwire.Filing{UserID: "alice", NewInboxID: itemID, RawText: askedText, Source: brainwire.KindText,
		Status: brainwire.StatusMisunderstood, Classification: brainwire.Classification{Bucket: "People", Confidence: 0.2, ClassifiedAt: now},
		UpstreamThreadID: thread, Now: now}); err != nil {
		t.Fatal(err)
	}
	phone := phoneOn(t, st, agent, policy, 0)
	body := fmt.Sprintf(`{"inbox_item_id":%q,"follow_up_text":%q,"follow_up_round":1,"thread_id":"t-2","run_id":"r-2"}`, itemID, followUpText)
	return postStream(t, phone, "/api/capture/follow-up", body)
}

// TestALostFollowUpIsLookedUp resets the connection of a follow-up's
// first call, which creates on the conversation, after the request went
// out: the conversation is asked whether it was taken. Taken, it is not
// sent twice and the phone is told the answer was lost; not taken, it is
// sent again and the phone gets what it gets without the fault.
func TestALostFollowUpIsLookedUp(t *testing.T) {
	for _, u := range followUpUpstreams() {
		t.Run(u.name, func(t *testing.T) {
			agent, _ := u.serve(t, u.calls)
			want := phoneFollowUp(t, agent, fastRetries, u.thread)
			if !strings.Contains(want, `"type":"CLASSIFIED"`) {
				t.Fatalf("the follow-up without faults:\n%s", want)
			}
			first := u.calls[0]
			lost := scripttest.Call{Method: first.Method, Path: first.Path, Response: scripttest.Reset()}

			t.Run("not taken: sent again", func(t *testing.T) {
				script := append([]scripttest.Call{lost, scripttest.Expect(u.lookup, u.notTaken)}, u.calls...)
				agent, requests := u.serve(t, script)
				if got := phoneFollowUp(t, agent, fastRetries, u.thread); got != want {
					t.Fatalf("the phone got:\n%s\nwant:\n%s", got, want)
				}
				reqs := requests()
				if !bytes.Equal(reqs[0].RawBody, reqs[2].RawBody) || reqs[0].Header.Get("Idempotency-Key") != reqs[2].Header.Get("Idempotency-Key") {
					t.Errorf("sent again %s\nwant %s", reqs[2].RawBody, reqs[0].RawBody)
				}
			})
			t.Run("taken: not repeated", func(t *testing.T) {
				var firstReq atomic.Pointer[scripttest.Request]
				script := []scripttest.Call{
					{Method: first.Method, Path: first.Path, Response: scripttest.Respond(func(r scripttest.Request) scripttest.Response {
						firstReq.Store(&r)
						return scripttest.Reset()
					})},
					scripttest.Expect(u.lookup, scripttest.Respond(func(scripttest.Request) scripttest.Response { return u.taken(*firstReq.Load()) })),
				}
				agent, requests := u.serve(t, script)
				got := phoneFollowUp(t, agent, fastRetries, u.thread)
				complete := `data: {"type":"COMPLETE","threadId":"t-2","runId":"r-2"}` + "\n\n"
				frames := strings.Split(strings.TrimSuffix(got, complete), "\n\n")
				if !strings.HasSuffix(got, complete) || len(frames) < 2 || !strings.HasPrefix(frames[len(frames)-2], `data: {"type":"ERROR"`) ||
					!strings.Contains(frames[len(frames)-2], "the agent service took the request but its answer was lost") {
					t.Errorf("the phone got:\n%s\nwant ERROR saying the answer was lost, then COMPLETE", got)
				}
				if n := len(requests()); n != 2 {
					t.Errorf("%d requests; want the call and its lookup", n)
				}
			})
		})
	}
}

// TestALostThreadAndRunIsUndone resets the connection of a new classic
// capture's first call, which creates a thread and its run, after the
// request went out. The project's newest threads are asked for the one the
// call tagged: found, its run is cancelled and the thread deleted before
// the call is sent again, so that no run of it goes on unheard; not found,
// the call is sent again. Either way the phone gets what it gets without
// the fault.
func TestALostThreadAndRunIsUndone(t *testing.T) {
	classic := upstreams()[1]
	agent, _ := classic.serve(t, classic.calls)
	want := phoneCapture(t, agent, fastRetries, 0)
	if !strings.Contains(want, `"type":"CLASSIFIED"`) {
		t.Fatalf("the capture without faults:\n%s", want)
	}
	first := classic.calls[0]
	thread := func(id string, created int64, md map[string]any) map[string]any {
		return map[string]any{"id": id, "object": "thread", "created_at": created, "metadata": md, "tool_resources": map[string]any{}}
	}
	for _, c := range []struct {
		name  string
		taken bool
		// deleted answers the thread's deletion: a service may refuse
		// it while the cancelled run winds down, which changes nothing.
		deleted scripttest.Response
	}{
		{"none", false, scripttest.Response{}},
		{"done", true, foundrytest.JSON(http.StatusOK, `{"id":"thread_lost","object":"thread.deleted","deleted":true}`)},
		{"refused", true, foundrytest.Error(http.StatusBadRequest, "invalid_request_error", "Cannot delete thread thread_lost while it has an active run.")},
	} {
		taken := c.taken
		t.Run(fmt.Sprintf("taken %v, deletion %s", taken, c.name), func(t *testing.T) {
			var firstReq atomic.Pointer[scripttest.Request]
			script := []scripttest.Call{
				{Method: first.Method, Path: first.Path, Response: scripttest.Respond(func(r scripttest.Request) scripttest.Response {
					firstReq.Store(&r)
					return scripttest.Reset()
				})},
				foundrytest.Expect("GET /threads", scripttest.Respond(func(scripttest.Request) scripttest.Response {
					threads := []any{thread("thread_other", 1741290900, map[string]any{})}
					if taken {
						th, _ := firstReq.Load().Body["thread"].(map[string]any)
						md, _ := th["metadata"].(map[string]any)
						threads = append([]any{thread("thread_lost", 1741290958, md)}, threads...)
					}
					return foundrytest.JSON(http.StatusOK, foundrytest.List(threads...))
				})),
			}
			lost := foundrytest.NewRun("thread_lost", "run_lost")
			if taken {
				script = append(script,
					foundrytest.Expect("GET /threads/thread_lost/runs", foundrytest.JSON(http.StatusOK, foundrytest.List(lost.Object("requires_action")))),
					foundrytest.Expect("POST /threads/thread_lost/runs/run_lost/cancel", foundrytest.JSON(http.StatusOK, lost.Object("cancelling"))),
					foundrytest.Expect("DELETE /threads/thread_lost", c.deleted),
				)
			}
			script = append(script, classic.calls...)
			agent, requests := classic.serve(t, script)
			if got := phoneCapture(t, agent, fastRetries, 0); got != want {
				t.Fatalf("the phone got:\n%s\nwant, as without the fault:\n%s", got, want)
			}
			reqs := requests()
			again := reqs[len(reqs)-len(classic.calls)]
			if again.String() != reqs[0].String() || !bytes.Equal(reqs[0].RawBody, again.RawBody) {
				t.Errorf("sent again %s %s\nwant %s %s", again, again.RawBody, reqs[0], reqs[0].RawBody)
			}
		})
	}
}

// TestALostThreadAndRunIsUndoneOnTheSimulator: in front of the simulator,
// a proxy lets the service take a new capture's thread-and-run and then
// breaks the connection before its answer. The thread it made is found
// among the newest, cancelled and deleted, the call is sent again, and the
// phone gets its outcome; the service keeps one thread, the second.
func TestALostThreadAndRunIsUndoneOnTheSimulator(t *testing.T) {
	var sim atomic.Value // the simulator's handler
	var lost atomic.Bool
	front := func(s http.Handler, w http.ResponseWriter, r *http.Request) bool {
		sim.Store(s)
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/threads/runs") || lost.Swap(true) {
			return false
		}
		s.ServeHTTP(httptest.NewRecorder(), r) // taken, and its answer lost
		panic(http.ErrAbortHandler)
	}
	got, items, calls := simCapture(t, simFaces()[2], "Call Sarah about the offsite", front)
	if !strings.Contains(got, `"type":"CLASSIFIED"`) || len(items) != 1 || calls.creates.Load() != 3 {
		t.Fatalf("after %d calls creating, filed %d; the phone got:\n%s\nwant CLASSIFIED after the thread-and-run twice and the tool outputs", calls.creates.Load(), len(items), got)
	}
	rec, req := httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, simulator.ProjectPath+"/threads?api-version=v1", nil)
	req.Header.Set("Authorization", "Bearer t")
	sim.Load().(http.Handler).ServeHTTP(rec, req)
	var threads struct {
		Data []struct{ ID string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &threads); err != nil || len(threads.Data) != 1 {
		t.Fatalf("the service keeps %+v (%v); want one thread", threads.Data, err)
	}
}

// simFace is one face of the simulator as the server reaches it, and the
// calls of it that create on the service and that look a lost one up.
type simFace struct {
	name           string
	create, lookup func(*http.Request) bool
	agent          func(base string) func(http.RoundTripper) (brainwire.Provider, error)
}

func simFaces() []simFace {
	post := func(suffix string) func(*http.Request) bool {
		return func(r *http.Request) bool {
			return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, suffix)
		}
	}
	return []simFace{
		{
			name:   "responses",
			create: post("/responses"),
			lookup: func(r *http.Request) bool {
				return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/items")
			},
			agent: func(base string) func(http.RoundTripper) (brainwire.Provider, error) {
				project := base + simulator.ProjectPath
				return wiring.Responses(project+"/openai/v1", project, responses.Agent{Model: simulator.DefaultModel, Instructions: "Classify."}, staticAuth)
			},
		},
		{
			name:   "adk",
			create: post("/run_sse"),
			lookup: func(r *http.Request) bool {
				return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/sessions/")
			},
			agent: func(base string) func(http.RoundTripper) (brainwire.Provider, error) {
				return wiring.ADK(base, simulator.DefaultADKApp, nil)
			},
		},
		{
			name: "classic",
			create: func(r *http.Request) bool {
				return r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/cancel")
			},
			lookup: func(r *http.Request) bool {
				return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/threads")
			},
			agent: func(base string) func(http.RoundTripper) (brainwire.Provider, error) {
				return wiring.Foundry(base+simulator.ProjectPath, simulator.DefaultAgentID, "", staticAuth)
			},
		},
	}
}

// simCalls counts the calls a simulator answered that create, and keeps
// the statuses of those that look up.
type simCalls struct {
	creates atomic.Int64
	mu      sync.Mutex
	lookups []int
}

func (c *simCalls) lookedUp() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.lookups...)
}

// statusWriter keeps the status of the answer written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// simCapture runs one typed capture of text through wiring.New against a
// new simulator's face, behind front, which serves each call (the
// simulator's own answer when it returns false). It returns the phone's
// SSE bytes and the inbox items filed.
func simCapture(t *testing.T, f simFace, text string, front func(sim http.Handler, w http.ResponseWriter, r *http.Request) bool) (string, []brainwire.InboxItem, *simCalls) {
	t.Helper()
	sim := simulator.New(simulator.Config{ChunkDelay: -1})
	calls := &simCalls{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.create(r) {
			calls.creates.Add(1)
		}
		if front != nil && front(sim, w, r) {
			return
		}
		if !f.lookup(r) {
			sim.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		sim.ServeHTTP(sw, r)
		calls.mu.Lock()
		calls.lookups = append(calls.lookups, sw.status)
		calls.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	st := openStore(t)
	phone := phoneOn(t, st, f.agent(srv.URL), fastRetries, 0)
	body, _ := json.Marshal(map[string]string{"text": text, "thread_id": "t-1", "run_id": "r-1"})
	got := postStream(t, phone, "/api/capture", string(body))
	page, err := st.ListInbox(context.Background(), "alice", brainwire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got, page.Items, calls
}

// TestALostAnswerIsLookedUpOnTheSimulator: in front of the simulator, a
// gateway lets it take the call that carries a capture's tool outputs,
// then loses the answer: a 502, a 504, or the connection cut. The
// conversation (the session, the run) is asked whether it took the
// outputs; it did, so they are not sent again, and the phone gets what
// it gets without the fault, the capture filed once.
func TestALostAnswerIsLookedUpOnTheSimulator(t *testing.T) {
	const text = "Call Sarah about the offsite"
	for _, f := range simFaces() {
		t.Run(f.name, func(t *testing.T) {
			want, _, _ := simCapture(t, f, text, nil)
			if !strings.Contains(want, `"type":"CLASSIFIED"`) {
				t.Fatalf("the capture without faults:\n%s", want)
			}
			for _, fault := range []string{"502", "504", "cut"} {
				t.Run(fault, func(t *testing.T) {
					var creates atomic.Int64
					front := func(sim http.Handler, w http.ResponseWriter, r *http.Request) bool {
						if !f.create(r) || creates.Add(1) != 2 {
							return false
						}
						sim.ServeHTTP(httptest.NewRecorder(), r) // taken, and its answer lost
						switch fault {
						case "502":
							http.Error(w, "Bad Gateway", http.StatusBadGateway)
						case "504":
							http.Error(w, "Gateway Timeout", http.StatusGatewayTimeout)
						default:
							panic(http.ErrAbortHandler)
						}
						return true
					}
					got, items, calls := simCapture(t, f, text, front)
					if got != want {
						t.Errorf("the phone got:\n%s\nwant, as without the fault:\n%s", got, want)
					}
					if len(items) != 1 || items[0].Status != brainwire.StatusClassified {
						t.Errorf("filed %+v; want one classified item", items)
					}
					if n, l := calls.creates.Load(), calls.lookedUp(); n != 2 || !slices.Equal(l, []int{http.StatusOK}) {
						t.Errorf("%d calls creating, lookups answered %v; want the 2 of the capture, the lost one looked up once (200)", n, l)
					}
				})
			}
		})
	}
}

// TestARefusalOfTheSimulatorIsLookedUpAndSentAgain: the simulator
// refuses each call of a run once under #refuse, with a status a gateway
// answers in front of a service that may have done the call (502, 504)
// or one that says it did not (429). The calls that may have been done
// are looked up, found not taken, and sent again: the capture ends with
// its outcome, filed once, on every face.
func TestARefusalOfTheSimulatorIsLookedUpAndSentAgain(t *testing.T) {
	for _, f := range simFaces() {
		for _, status := range []string{"502", "504", "429"} {
			t.Run(f.name+" "+status, func(t *testing.T) {
				got, items, calls := simCapture(t, f, "Call Sarah about the offsite #refuse:"+status, nil)
				if !strings.Contains(got, `"type":"CLASSIFIED"`) || len(items) != 1 {
					t.Fatalf("the phone got:\n%s\nfiled %d items; want CLASSIFIED, one item", got, len(items))
				}
				l := calls.lookedUp()
				switch {
				case status == "429" && len(l) != 0:
					t.Errorf("lookups answered %v; want none after a 429", l)
				case status != "429" && !slices.Equal(l, []int{http.StatusOK, http.StatusOK}):
					t.Errorf("lookups answered %v after a %s; want each of the 2 refused calls looked up (200)", l, status)
				}
			})
		}
	}
}
