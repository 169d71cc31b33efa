package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/internal/syncbuf"
)

const (
	upThread = "thread_01"
	upRun    = "run_01"
	complete = `{"type":"COMPLETE","threadId":"thread-id1","runId":"run-id2"}`
)

func classify(call ft.ToolCall, reasoning int) ft.Classify {
	c := ft.NewClassify(upThread, upRun, reasoning)
	c.Call = call
	return c
}

func submitPath() string {
	return "POST /threads/" + upThread + "/runs/" + upRun + "/submit_tool_outputs"
}

// toolOutputs returns the tool_outputs of the n-th submit_tool_outputs call.
func toolOutputs(t *testing.T, h *harness, n int) []map[string]any {
	t.Helper()
	subs := h.up.Find(submitPath())
	if len(subs) <= n {
		t.Fatalf("only %d submit_tool_outputs calls", len(subs))
	}
	var out []map[string]any
	for _, o := range subs[n].Body["tool_outputs"].([]any) {
		out = append(out, o.(map[string]any))
	}
	if subs[n].Body["stream"] != true {
		t.Errorf("submit_tool_outputs without stream:true: %v", subs[n].Body)
	}
	return out
}

func TestCaptureClassified(t *testing.T) {
	c := classify(ft.FileCaptureCall("call_1", "Call Sarah about the offsite", "People", 0.9, "classified"), 5)
	cont := c.Continuation()
	// The run completes well after the tool ran: the outcome must not wait.
	cont[len(cont)-2] = cont[len(cont)-2].After(400 * time.Millisecond)
	h := newHarness(t, []ft.Call{
		ft.Expect("POST /threads/runs", ft.Stream(c.Stream()...)),
		ft.Expect(submitPath(), ft.Stream(cont...)),
	})
	frames := h.capture("Call Sarah about the offsite")
	want := strings.Join([]string{
		`{"type":"STEP_START","stepName":"Classifying"}`,
		`{"type":"STEP_END","stepName":"Classifying"}`,
		`{"type":"CLASSIFIED","value":{"inboxItemId":"id3","bucket":"People","confidence":0.9}}`,
		complete,
	}, "\n")
	if got := payloads(frames); got != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
	}
	if gap := frames[3].At - frames[2].At; gap < 300*time.Millisecond {
		t.Errorf("CLASSIFIED arrived only %v before COMPLETE: it waited for the run to end", gap)
	}

	items := h.inbox(testUser)
	if len(items) != 1 {
		t.Fatalf("%d inbox items", len(items))
	}
	it := items[0]
	if it.ID != "id3" || it.Status != "classified" || it.RawText != "Call Sarah about the offsite" ||
		it.UpstreamThreadID != upThread || it.ClassificationMeta.Bucket != "People" || it.Source != brainwire.KindText {
		t.Fatalf("inbox item %+v", it)
	}
	rec, err := h.store.GetBucketRecord(context.Background(), testUser, "People", it.FiledRecordID)
	if err != nil || rec.InboxRecordID != it.ID {
		t.Fatalf("bucket record %+v, %v", rec, err)
	}

	// What went upstream: the agent, the tools, streaming; then the output.
	create := h.up.Find("POST /threads/runs")[0].Body
	if create["assistant_id"] != "asst_test" || create["stream"] != true {
		t.Errorf("create run body %v", create)
	}
	tools, _ := create["tools"].([]any)
	if len(tools) != 1 || !strings.Contains(mustJSON(tools[0]), `"name":"file_capture"`) {
		t.Errorf("tools sent: %s", mustJSON(tools))
	}
	outs := toolOutputs(t, h, 0)
	if len(outs) != 1 || outs[0]["tool_call_id"] != "call_1" || !strings.Contains(outs[0]["output"].(string), `"item_id":"id3"`) {
		t.Errorf("tool outputs %v", outs)
	}
	if n := len(h.up.Cancels()); n != 0 {
		t.Errorf("%d cancels for a run that completed", n)
	}
}

// TestCaptureOutcomesAreKept: each outcome short of a classification is
// told the phone and kept as it should be: a low-confidence capture filed
// pending with its bucket record, a misunderstood one waiting for its
// follow-up on the run's thread, one the agent never filed kept
// unresolved for a person, with the run's conversation.
func TestCaptureOutcomesAreKept(t *testing.T) {
	noTool := func() []ft.Call {
		r := ft.NewRun(upThread, upRun)
		evs := []ft.Event{r.ThreadCreated(), r.Created(), r.Queued(), r.InProgress(), r.MessageStepCreated("step_01", "msg_01")}
		evs = append(evs, r.Message("msg_01", "I am not", " sure what", " to do.")...)
		evs = append(evs, r.MessageStepCompleted("step_01", "msg_01", ft.Usage{Prompt: 10, Completion: 5, Total: 15}), r.Completed(ft.Usage{Prompt: 10, Completion: 5, Total: 15}), ft.Done())
		return []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(evs...))}
	}
	cases := []struct {
		name, text, outcome string
		script              []ft.Call
		status              string
		record              bool // filed in a bucket
	}{
		{"low confidence", "that thing about the place",
			`{"type":"LOW_CONFIDENCE","value":{"inboxItemId":"id3","bucket":"Ideas","confidence":0.4}}`,
			classify(ft.FileCaptureCall("call_1", "that thing about the place", "Ideas", 0.4, "pending"), 2).Script(), "pending", true},
		{"misunderstood", "asdf qwerty",
			`{"type":"MISUNDERSTOOD","value":{"threadId":"thread-id1","inboxItemId":"id3","questionText":"What did you mean by \"asdf\"?","foundryConversationId":"thread_01"}}`,
			classify(ft.ToolCall{ID: "call_1", Name: "file_capture",
				Arguments: `{"text":"asdf qwerty","bucket":"Ideas","confidence":0.1,"status":"misunderstood","question":"What did you mean by \"asdf\"?"}`}, 3).Script(),
			"misunderstood", false},
		{"no tool call", "hmm", `{"type":"UNRESOLVED","value":{"inboxItemId":"id3"}}`, noTool(), brainwire.StatusUnresolved, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.script)
			want := strings.Join([]string{
				`{"type":"STEP_START","stepName":"Classifying"}`,
				`{"type":"STEP_END","stepName":"Classifying"}`,
				c.outcome,
				complete,
			}, "\n")
			if got := payloads(h.capture(c.text)); got != want {
				t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
			}
			items := h.inbox(testUser)
			if len(items) != 1 || items[0].ID != "id3" || items[0].Status != c.status || items[0].RawText != c.text ||
				(items[0].FiledRecordID != "") != c.record || items[0].UpstreamThreadID != upThread {
				t.Fatalf("inbox %+v", items)
			}
			if c.record {
				if _, err := h.store.GetBucketRecord(context.Background(), testUser, "Ideas", items[0].FiledRecordID); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestUpstreamFaults: whatever goes wrong upstream, the phone hears an
// ERROR that says what (a v1 or AG-UI client a RUN_ERROR), nothing is stored,
// and a run that may still be alive upstream is cancelled.
func TestUpstreamFaults(t *testing.T) {
	r := ft.NewRun(upThread, upRun)
	cut := classify(ft.FileCaptureCall("call_1", "x", "People", 0.9, "classified"), 4).Stream()
	// Cut the connection in the middle of the fifth event's data.
	cut = append(cut[:5:5], ft.Cut(cut[5]))
	cases := []struct {
		name          string
		script        []ft.Call
		opts          []option
		message, code string
		cancels       bool
	}{
		{"failed run", []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(
			r.ThreadCreated(), r.Created(), r.Queued(), r.InProgress(), r.Failed("server_error", "Sorry, something went wrong."), ft.Done()))},
			nil, "The agent run failed: Sorry, something went wrong.", brainwire.EUpstream, false},
		{"error event", []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(
			r.ThreadCreated(), r.Created(), r.InProgress(), ft.ErrorEvent(`{"error":{"message":"Rate limit is exceeded.","code":"rate_limit_exceeded"}}`)))},
			nil, "The agent service reported an error: Rate limit is exceeded.", brainwire.EUpstream, true},
		{"connection reset mid-stream", []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(cut...))},
			nil, "The agent service failed: the agent service's event stream broke off", brainwire.EUpstream, true},
		{"429", []ft.Call{ft.Expect("POST /threads/runs", ft.Error(http.StatusTooManyRequests, "rate_limit_exceeded", "Too many requests, retry later."))},
			nil, "The agent service is busy; try again later", brainwire.EBusy, false},
		{"hang past the run timeout", []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(r.ThreadCreated(), r.Created(), r.Queued(), r.InProgress(), ft.Hang()))},
			[]option{withRunTimeout(300 * time.Millisecond)}, "The agent took too long to respond", "timeout", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.script, c.opts...)
			start := time.Now()
			want := strings.Join([]string{
				`{"type":"STEP_START","stepName":"Classifying"}`,
				`{"type":"ERROR","message":"` + c.message + `","code":"` + c.code + `"}`,
				complete,
			}, "\n")
			if got := payloads(h.capture("x")); got != want {
				t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the failed capture took %v", took)
			}
			if c.cancels {
				h.waitForCancel(upRun)
			} else if n := len(h.up.Cancels()); n != 0 {
				t.Errorf("%d cancels for a run that ended or never started", n)
			}
			if items := h.inbox(testUser); len(items) != 0 {
				t.Fatalf("stored %d items", len(items))
			}

			for _, p := range protocols[1:] {
				h := newHarness(t, c.script, c.opts...)
				e := p.ending(t, h.do("POST", p.path, testKey, "bearer", "application/json", p.text("Call mom")).body)
				if e.outcome != "error" || e.message != c.message || e.code != c.code || e.types[len(e.types)-1] != "RUN_ERROR" {
					t.Fatalf("%s: %v, want it to end in RUN_ERROR %q (%s)", p.name, e, c.message, c.code)
				}
			}
		})
	}
}

// TestClientDisconnectCancelsTheRun: a client that goes away mid-stream,
// like a phone losing its network, stops the run upstream, and the
// capture is logged as a disconnect, on every protocol.
func TestClientDisconnectCancelsTheRun(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			r := ft.NewRun(upThread, upRun)
			logs := &syncbuf.Buffer{}
			h := newHarness(t, []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(
				r.ThreadCreated(), r.Created(), r.Queued(), r.InProgress(), ft.MessageDelta("msg_01", "thinking"), ft.Hang()))},
				withLogger(slog.New(slog.NewTextHandler(logs, nil))))
			h.disconnectAfterStart(p.path, "application/json", p.text("x"), "STEP_START")
			if l := waitForLog(t, logs, `msg="capture ended`); !strings.Contains(l, `level=WARN msg="capture ended: client went away"`) {
				t.Fatalf("a client that left mid-run not logged as gone:\n%s", l)
			}
		})
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
