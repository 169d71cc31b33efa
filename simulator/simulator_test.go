package simulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/simulator"
)

// fileFlow runs a capture to its file_capture call, answers it like the
// server would, and returns the call's arguments and both streams.
func fileFlow(t *testing.T, c *client, text string) (fileArgs, []frame, []frame) {
	t.Helper()
	s1 := c.createAndRun(text)
	wantShape(t, s1, firstTurn()...)
	r, calls := pendingCalls(t, s1)
	if len(calls) != 1 {
		t.Fatalf("want one call, got %d", len(calls))
	}
	a := fileCall(t, calls[0])
	s2 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: fmt.Sprintf(fileOK, a.Bucket, *a.Confidence, a.Status)})
	wantShape(t, s2, finalTurn()...)
	checkRunRules(t, [][]frame{s1, s2})
	return a, s1, s2
}

// TestFilings: each kind of capture is filed with its bucket, confidence
// and status, the reasoning says why, and the closing message what
// happened.
func TestFilings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text, bucket, status, title string
		confidence                  float64 // at most this when misunderstood
		reasoning                   []string
		closing                     string
	}{
		{"Call mom about her birthday on Sunday", "People", "classified", "Mom", 0.95, []string{"Cues for People", `"call mom"`}, "Filed to People."},
		{"Finish the launch deck before the Friday deadline", "Projects", "classified", "Finish the launch deck before the", 0.95,
			[]string{"Cues for Projects", `"deadline"`}, "Filed to Projects."},
		{"What if we made an app that waters plants", "Ideas", "classified", "What if we made an app", 0.8, []string{"Cues for Ideas", `"what if"`}, "Filed to Ideas."},
		{"Pay the electricity bill and renew car insurance", "Admin", "classified", "Pay the electricity bill and renew", 0.95,
			[]string{"Cues for Admin", `"insurance"`}, "Filed to Admin."},
		{"Maybe we could plan Sarah's birthday", "Ideas", "pending", "Maybe we could plan Sarah's birthday", 0.53,
			[]string{"below 0.6: status pending", "Cues for People"}, "Filed to Ideas, pending your review."},
		{"the thing from earlier", "Ideas", "misunderstood", "The thing from earlier", 0.3, []string{"Nothing tells me where this belongs"}, "Not filed yet: I asked for a clarification."},
		{"xkcd ??? 42 !!", "Ideas", "misunderstood", "Xkcd ??? 42", 0.3, []string{"mostly not words"}, "Not filed yet: I asked for a clarification."},
		{"dentist", "Admin", "misunderstood", "Dentist", 0.3, []string{"too short"}, "Not filed yet: I asked for a clarification."},
	}
	c, _ := newSim(t, simulator.Config{})
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			a, s1, s2 := fileFlow(t, c, tc.text)
			misunderstood := tc.status == "misunderstood"
			if a.Text != tc.text || a.Bucket != tc.bucket || a.Status != tc.status || a.Title != tc.title ||
				(misunderstood && *a.Confidence > tc.confidence) || (!misunderstood && *a.Confidence != tc.confidence) ||
				(a.Question != nil) != misunderstood || (misunderstood && !strings.HasSuffix(*a.Question, "?")) {
				t.Errorf("arguments %+v (confidence %v)", a, *a.Confidence)
			}
			reasoning := messages(t, s1)[0]
			want := append([]string{"not a language model"}, tc.reasoning...)
			if misunderstood {
				want = append(want, *a.Question)
			}
			for _, w := range want {
				if !strings.Contains(reasoning, w) {
					t.Errorf("reasoning %q does not say %q", reasoning, w)
				}
			}
			if n := deltaCount(s1)[0]; n < 20 {
				t.Errorf("reasoning streamed in %d chunks, want word-sized chunks", n)
			}
			if n := strings.Count(strings.Join(names(s1), " "), "thread.run.step.delta"); n < 5 {
				t.Errorf("call streamed in %d step deltas, want the name then several argument fragments", n)
			}
			if got := messages(t, s2); len(got) != 1 || got[0] != tc.closing {
				t.Errorf("closing message %q", got)
			}
			checkFirstTurnObjects(t, s1, tc.text)
			done := lastRun(t, s2)
			if done.Status != "completed" || done.Usage == nil || done.Usage.TotalTokens == 0 ||
				done.CompletedAt == nil || done.ExpiresAt != nil || done.RequiredAction != nil {
				t.Errorf("completed run %+v", done)
			}
		})
	}
}

// checkFirstTurnObjects checks the fields a client reads on a new capture.
func checkFirstTurnObjects(t *testing.T, s1 []frame, text string) {
	t.Helper()
	var th struct {
		ID        string `json:"id"`
		Object    string `json:"object"`
		CreatedAt int64  `json:"created_at"`
	}
	if err := json.Unmarshal([]byte(s1[0].Data), &th); err != nil || s1[0].Event != "thread.created" {
		t.Fatalf("first event %s %s", s1[0].Event, s1[0].Data)
	}
	if !strings.HasPrefix(th.ID, "thread_") || th.Object != "thread" || th.CreatedAt != testClock.Unix() {
		t.Errorf("thread %+v", th)
	}
	created := decodeAs[foundrywire.Run](t, s1[1])
	if !strings.HasPrefix(created.ID, "run_") || created.ThreadID != th.ID || created.AssistantID != testAgent ||
		created.Status != "queued" || created.CreatedAt != testClock.Unix() || created.StartedAt != nil ||
		created.Instructions != testInstructions || created.Usage != nil || created.RequiredAction != nil {
		t.Errorf("created run %+v", created)
	}
	var want, got []any
	_ = json.Unmarshal([]byte(testTools), &want)
	b, _ := json.Marshal(created.Tools)
	_ = json.Unmarshal(b, &got)
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("tools not echoed:\n got %v\nwant %v", got, want)
	}
	if started := decodeAs[foundrywire.Run](t, s1[3]); started.Status != "in_progress" || started.StartedAt == nil {
		t.Errorf("in_progress run %+v", started)
	}
	for _, f := range s1 {
		switch f.Event {
		case "thread.run.step.created":
			if st := decodeAs[foundrywire.Step](t, f); !strings.HasPrefix(st.ID, "step_") || st.ThreadID != th.ID {
				t.Errorf("step %+v", st)
			}
		case "thread.message.created":
			if m := decodeAs[foundrywire.Message](t, f); !strings.HasPrefix(m.ID, "msg_") || m.RunID == nil || *m.RunID != created.ID || m.ThreadID != th.ID {
				t.Errorf("message %+v", m)
			}
		}
	}
	r, _ := pendingCalls(t, s1)
	if r.ID != created.ID || r.ExpiresAt == nil || *r.ExpiresAt != testClock.Unix()+600 {
		t.Errorf("requires_action run %+v", r)
	}
}

func TestInvalidBucketRetry(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{})
	s1 := c.createAndRun("#invalid-bucket Call mom about her birthday")
	wantShape(t, s1, firstTurn()...)
	r, calls := pendingCalls(t, s1)
	if a := fileCall(t, calls[0]); a.Bucket != "Misc" {
		t.Fatalf("first call files %q, want Misc", a.Bucket)
	}
	s2 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: `{"error":"invalid_bucket","message":"unknown bucket \"Misc\"","valid_values":["People","Projects","Ideas","Admin"]}`})
	wantShape(t, s2, seq(resumed, messageStep, toolStep, toRequire)...)
	if m := messages(t, s2)[0]; !strings.Contains(m, `"Misc"`) || !strings.Contains(m, "Retrying with People") {
		t.Errorf("retry reasoning %q", m)
	}
	_, retry := pendingCalls(t, s2)
	a := fileCall(t, retry[0])
	if a.Bucket != "People" || a.Status != "classified" || retry[0].ID == calls[0].ID {
		t.Errorf("retry %+v (id %s)", a, retry[0].ID)
	}
	s3 := c.submit(r.ThreadID, r.ID, map[string]string{retry[0].ID: fmt.Sprintf(fileOK, "People", 0.95, "classified")})
	wantShape(t, s3, finalTurn()...)
	checkRunRules(t, [][]frame{s1, s2, s3})

	t.Run("accepted without retry", func(t *testing.T) {
		s1 := c.createAndRun("#invalid-bucket Call mom")
		r, calls := pendingCalls(t, s1)
		s2 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: `{"bucket":"Misc","confidence":0.8,"item_id":"x","status":"classified"}`})
		wantShape(t, s2, finalTurn()...)
	})
}

func TestFileCaptureErrorEndsRun(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{})
	s1 := c.createAndRun("Call mom")
	r, calls := pendingCalls(t, s1)
	s2 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: `{"error":"store_failed","message":"the capture could not be filed"}`})
	wantShape(t, s2, finalTurn()...)
	if m := messages(t, s2)[0]; m != "I couldn't file this capture (store_failed: the capture could not be filed)." {
		t.Errorf("closing message %q", m)
	}
}

func TestVoice(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{})
	const url = "http://127.0.0.1:10000/devstoreaccount1/audio/u1/abc.m4a"
	for _, tc := range []struct{ name, output string }{
		{"json transcript", `{"text":"Renew the car insurance before Friday"}`},
		{"plain transcript", `Renew the car insurance before Friday`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s1 := c.createAndRun("audio: " + url)
			wantShape(t, s1, firstTurn()...)
			r, calls := pendingCalls(t, s1)
			if len(calls) != 1 || calls[0].Function.Name != "transcribe_audio" || calls[0].Function.Arguments != `{"blob_url":"`+url+`"}` {
				t.Fatalf("calls %+v", calls)
			}
			s2 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: tc.output})
			wantShape(t, s2, seq(resumed, messageStep, toolStep, toRequire)...)
			if m := messages(t, s2)[0]; !strings.Contains(m, "The transcript reads") {
				t.Errorf("reasoning %q", m)
			}
			_, calls = pendingCalls(t, s2)
			a := fileCall(t, calls[0])
			if a.Text != "Renew the car insurance before Friday" || a.Bucket != "Admin" || a.Status != "classified" {
				t.Errorf("arguments %+v", a)
			}
			s3 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: fmt.Sprintf(fileOK, "Admin", *a.Confidence, a.Status)})
			wantShape(t, s3, finalTurn()...)
			checkRunRules(t, [][]frame{s1, s2, s3})
		})
	}
	t.Run("transcription error", func(t *testing.T) {
		s1 := c.createAndRun("audio: " + url)
		r, calls := pendingCalls(t, s1)
		s2 := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: `{"error":"unsupported_format","message":"audio/x-foo is not supported"}`})
		wantShape(t, s2, finalTurn()...)
		if m := messages(t, s2)[0]; !strings.Contains(m, "couldn't transcribe") {
			t.Errorf("closing message %q", m)
		}
	})
}

func TestFollowUpOnSameThread(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{})
	a, s1, _ := fileFlow(t, c, "the thing from earlier")
	if a.Status != "misunderstood" {
		t.Fatalf("first pass %+v", a)
	}
	threadID := lastRun(t, s1).ThreadID
	s := c.stream("/threads/"+threadID+"/runs", map[string]any{
		"assistant_id":            testAgent,
		"additional_messages":     []any{userMessage("It's my dentist appointment next week")},
		"additional_instructions": "This is a clarification.",
		"tools":                   json.RawMessage(testTools),
	})
	wantShape(t, s, seq(runStart, messageStep, toolStep, toRequire)...)
	r, calls := pendingCalls(t, s)
	if r.ThreadID != threadID || !strings.HasSuffix(r.Instructions, "This is a clarification.") {
		t.Errorf("follow-up run %+v", r)
	}
	got := fileCall(t, calls[0])
	if got.Bucket != "Admin" || got.Status != "classified" || got.Text != "the thing from earlier\nIt's my dentist appointment next week" {
		t.Errorf("follow-up arguments %+v", got)
	}
	if m := messages(t, s)[0]; !strings.Contains(m, "clarification") {
		t.Errorf("reasoning %q", m)
	}
	done := c.submit(threadID, r.ID, map[string]string{calls[0].ID: fmt.Sprintf(fileOK, "Admin", *got.Confidence, got.Status)})
	wantShape(t, done, finalTurn()...)

	var list struct {
		Object string                `json:"object"`
		Data   []foundrywire.Message `json:"data"`
	}
	c.call(http.MethodGet, "/threads/"+threadID+"/messages?order=asc&limit=100", nil, http.StatusOK, &list)
	var roles []string
	for _, m := range list.Data {
		roles = append(roles, m.Role)
	}
	want := []string{"user", "assistant", "assistant", "user", "assistant", "assistant"}
	if list.Object != "list" || !slices.Equal(roles, want) {
		t.Errorf("thread messages %v, want %v", roles, want)
	}
}

// untilPaused starts a streamed capture and reads it up to its reasoning's
// first chunk, which a simulator with a long ChunkDelay holds back.
func (c *client) untilPaused(ctx context.Context) (*http.Response, *sseReader, []frame, foundrywire.Run) {
	c.t.Helper()
	resp := c.request(ctx, http.MethodPost, "/threads/runs", map[string]any{
		"assistant_id": testAgent, "stream": true, "tools": json.RawMessage(testTools),
		"thread": map[string]any{"messages": []any{userMessage("Call mom")}},
	})
	p := newSSEReader(resp.Body)
	var frames []frame
	var run foundrywire.Run
	for {
		f, err := p.next()
		if err != nil {
			c.t.Fatalf("before the pause: %v", err)
		}
		frames = append(frames, f)
		if f.Event == "thread.run.created" {
			run = decodeAs[foundrywire.Run](c.t, f)
		}
		if f.Event == "thread.message.in_progress" {
			return resp, p, frames, run
		}
	}
}

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{ChunkDelay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, p, frames, run := c.untilPaused(ctx)
	defer resp.Body.Close()
	start := time.Now()
	var cancelled foundrywire.Run
	c.call(http.MethodPost, "/threads/"+run.ThreadID+"/runs/"+run.ID+"/cancel", nil, http.StatusOK, &cancelled)
	if cancelled.Status != "cancelling" {
		t.Errorf("cancel answered status %q", cancelled.Status)
	}
	for {
		f, err := p.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stream took %v to end after cancel", d)
	}
	checkFraming(t, frames)
	wantShape(t, frames, "thread.created", "thread.run.created", "thread.run.queued", "thread.run.in_progress",
		"thread.run.step.created", "thread.run.step.in_progress", "thread.message.created", "thread.message.in_progress",
		"thread.run.cancelling", "thread.run.cancelled", "done")
	var got foundrywire.Run
	c.call(http.MethodGet, "/threads/"+run.ThreadID+"/runs/"+run.ID, nil, http.StatusOK, &got)
	if got.Status != "cancelled" || got.CancelledAt == nil {
		t.Errorf("run after cancel %+v", got)
	}
	c.call(http.MethodPost, "/threads/"+run.ThreadID+"/runs/"+run.ID+"/cancel", nil, http.StatusBadRequest, nil)
}

func TestCancelWhileAwaitingOutputs(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{})
	var queued foundrywire.Run
	c.call(http.MethodPost, "/threads/runs", map[string]any{
		"assistant_id": testAgent, "tools": json.RawMessage(testTools),
		"thread": map[string]any{"messages": []any{userMessage("Call mom")}},
	}, http.StatusOK, &queued)
	var got foundrywire.Run
	c.call(http.MethodPost, "/threads/"+queued.ThreadID+"/runs/"+queued.ID+"/cancel", nil, http.StatusOK, &got)
	if got.Status != "cancelling" {
		t.Errorf("cancel answered %q", got.Status)
	}
	c.call(http.MethodGet, "/threads/"+queued.ThreadID+"/runs/"+queued.ID, nil, http.StatusOK, &got)
	if got.Status != "cancelled" {
		t.Errorf("run status %q", got.Status)
	}
}

// TestDisconnectFreesHandler: a client that goes away mid-pause releases
// the handler at once, and the run still reaches requires_action.
func TestDisconnectFreesHandler(t *testing.T) {
	t.Parallel()
	sim := simulator.New(simulator.Config{ChunkDelay: time.Minute, Now: func() time.Time { return testClock }})
	var inFlight atomic.Int32
	returned := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer func() {
			inFlight.Add(-1)
			returned <- struct{}{}
		}()
		sim.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := &client{t: t, base: srv.URL, hc: srv.Client()}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, _, _, run := c.untilPaused(ctx)
	cancel()
	resp.Body.Close()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("handler still running 5s after the client left")
	}
	var got foundrywire.Run
	c.call(http.MethodGet, "/threads/"+run.ThreadID+"/runs/"+run.ID, nil, http.StatusOK, &got)
	<-returned
	if got.Status != "requires_action" || got.RequiredAction == nil {
		t.Errorf("run after disconnect %+v", got)
	}
	if n := inFlight.Load(); n != 0 {
		t.Errorf("%d handlers still running", n)
	}
}

func TestNonStreamed(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{})
	var th struct {
		ID string `json:"id"`
	}
	c.call(http.MethodPost, "/threads", map[string]any{"messages": []any{userMessage("Renew my passport")}}, http.StatusOK, &th)
	var queued foundrywire.Run
	c.call(http.MethodPost, "/threads/"+th.ID+"/runs", map[string]any{"assistant_id": testAgent, "tools": json.RawMessage(testTools)}, http.StatusOK, &queued)
	if queued.Status != "queued" || queued.ThreadID != th.ID {
		t.Fatalf("create answered %+v", queued)
	}
	var r foundrywire.Run
	c.call(http.MethodGet, "/threads/"+th.ID+"/runs/"+queued.ID, nil, http.StatusOK, &r)
	if r.Status != "requires_action" || len(r.RequiredAction.SubmitToolOutputs.ToolCalls) != 1 {
		t.Fatalf("run %+v", r)
	}
	call := r.RequiredAction.SubmitToolOutputs.ToolCalls[0]
	if a := fileCall(t, call); a.Bucket != "Admin" {
		t.Errorf("arguments %+v", a)
	}
	// A thread with a run awaiting outputs takes no messages or runs.
	c.call(http.MethodPost, "/threads/"+th.ID+"/messages", userMessage("more"), http.StatusBadRequest, nil)
	c.call(http.MethodPost, "/threads/"+th.ID+"/runs", map[string]any{"assistant_id": testAgent}, http.StatusBadRequest, nil)

	c.call(http.MethodPost, "/threads/"+th.ID+"/runs/"+r.ID+"/submit_tool_outputs",
		map[string]any{"tool_outputs": toolOutputs(map[string]string{call.ID: `{"bucket":"Admin"}`})}, http.StatusOK, &r)
	if r.Status != "queued" {
		t.Errorf("submit answered %q", r.Status)
	}
	c.call(http.MethodGet, "/threads/"+th.ID+"/runs/"+r.ID, nil, http.StatusOK, &r)
	if r.Status != "completed" || r.Usage == nil || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens {
		t.Errorf("run %+v", r)
	}
	var list struct {
		Data    []foundrywire.Message `json:"data"`
		FirstID string                `json:"first_id"`
	}
	c.call(http.MethodGet, "/threads/"+th.ID+"/messages?limit=1", nil, http.StatusOK, &list)
	if len(list.Data) != 1 || list.Data[0].Role != "assistant" || list.Data[0].Content[0].Text.Value != "Filed to Admin." {
		t.Errorf("newest message %+v", list.Data)
	}
}

// wantError checks a Foundry face's error: status, and the service's
// shape {"error":{code,message,type,param}} with the code named.
func wantError(t *testing.T, resp *http.Response, status int, code string) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || !isServiceError(b) || !strings.Contains(string(b), `"code":"`+code+`"`) {
		t.Errorf("status %d body %s, want %d %s", resp.StatusCode, b, status, code)
	}
}

// isServiceError reports whether b is the Foundry faces' error shape,
// {"error":{code,message,type,param}}, with a message and a type.
func isServiceError(b []byte) bool {
	var e struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	var msg, typ string
	if json.Unmarshal(b, &e) != nil || json.Unmarshal(e.Error["message"], &msg) != nil || json.Unmarshal(e.Error["type"], &typ) != nil {
		return false
	}
	_, param := e.Error["param"]
	return msg != "" && typ != "" && param
}

// TestSubmitErrors: tool outputs that do not answer the pending calls,
// one each, are refused, and the run still waits for them.
func TestSubmitErrors(t *testing.T) {
	t.Parallel()
	c, _ := newSim(t, simulator.Config{})
	s1 := c.createAndRun("#two-calls Call mom and finish the deck")
	r, calls := pendingCalls(t, s1)
	path := "/threads/" + r.ThreadID + "/runs/" + r.ID + "/submit_tool_outputs"
	wantError(t, c.request(context.Background(), http.MethodGet, "/threads/"+r.ThreadID+"/runs/run_nope", nil), http.StatusNotFound, "not_found")
	wantError(t, c.request(context.Background(), http.MethodPost, "/threads/"+r.ThreadID+"/runs/run_nope/submit_tool_outputs",
		map[string]any{"tool_outputs": []any{}}), http.StatusNotFound, "not_found")
	bad := map[string][]map[string]any{
		"missing one":  {{"tool_call_id": calls[0].ID, "output": "ok"}},
		"unknown id":   {{"tool_call_id": calls[0].ID, "output": "ok"}, {"tool_call_id": "call_other", "output": "ok"}},
		"duplicate id": {{"tool_call_id": calls[0].ID, "output": "ok"}, {"tool_call_id": calls[0].ID, "output": "ok"}},
		"not a string": {{"tool_call_id": calls[0].ID, "output": map[string]any{"a": 1}}, {"tool_call_id": calls[1].ID, "output": "ok"}},
		"no id":        {{"output": "ok"}, {"tool_call_id": calls[1].ID, "output": "ok"}},
	}
	for name, outs := range bad {
		resp := c.request(context.Background(), http.MethodPost, path, map[string]any{"tool_outputs": outs, "stream": true})
		t.Run(name, func(t *testing.T) { wantError(t, resp, http.StatusBadRequest, "invalid_request") })
	}
	var still foundrywire.Run
	c.call(http.MethodGet, "/threads/"+r.ThreadID+"/runs/"+r.ID, nil, http.StatusOK, &still)
	if still.Status != "requires_action" {
		t.Fatalf("after bad submits: status %q", still.Status)
	}
	done := c.submit(r.ThreadID, r.ID, map[string]string{calls[0].ID: "ok", calls[1].ID: "ok"})
	wantShape(t, done, finalTurn()...)
	resp := c.request(context.Background(), http.MethodPost, path,
		map[string]any{"tool_outputs": []any{map[string]any{"tool_call_id": calls[0].ID, "output": "ok"}}})
	wantError(t, resp, http.StatusBadRequest, "invalid_request") // not in requires_action any more
}

// TestServe runs the simulator on a real listener until its context ends.
func TestServe(t *testing.T) {
	t.Parallel()
	// Paced, barely: the stats count the paced frames.
	sim := simulator.New(simulator.Config{ChunkDelay: time.Microsecond})
	ln, err := newLoopbackListener()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sim.Serve(ctx, ln) }()
	c := &client{t: t, base: "http://" + ln.Addr().String() + simulator.ProjectPath, hc: &http.Client{}}
	c.createAndRun("Call mom")
	// HTTP/2 without TLS, prior knowledge, on the same listener.
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	(&client{t: t, base: c.base, hc: &http.Client{Transport: h2c}}).createAndRun("Call dad")

	stats := func() simulator.Stats {
		t.Helper()
		resp, err := http.Get("http://" + ln.Addr().String() + simulator.StatsPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s simulator.Stats
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stats: %d %v", resp.StatusCode, err)
		}
		return s
	}
	// Two connections at least (one per transport); the stats request
	// may reuse the first or dial its own.
	s := stats()
	if s.Requests != 2 || s.HTTP2Requests != 1 || s.Connections < 2 || s.Connections > 3 || !reflect.DeepEqual(s, sim.Stats()) {
		t.Errorf("stats after runs over HTTP/1.1 and h2c: %+v (Stats() %+v)", s, sim.Stats())
	}
	late := s.PacedLate
	var paced int64
	for _, n := range late.Counts {
		paced += n
	}
	if paced == 0 || len(late.BoundsMs) != len(late.Counts)-1 || !slices.IsSorted(late.BoundsMs) {
		t.Errorf("paced frames' lateness after two runs: %+v", late)
	}
	if resp, err := http.Post("http://"+ln.Addr().String()+simulator.StatsPath, "application/json", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST stats: %v %v", resp, err)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}
