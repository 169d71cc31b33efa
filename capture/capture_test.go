package capture_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/capture"
	"github.com/brainwire/brainwire/sqlite"
)

// filer is an agent that files every capture in People, or, when hang is
// set, says nothing until its run is stopped.
type filer struct {
	hang   bool
	starts atomic.Int32
}

func (p *filer) Name() string { return "filer" }

func (p *filer) Start(ctx context.Context, req brainwire.RunRequest) (brainwire.Run, error) {
	p.starts.Add(1)
	call := brainwire.ToolCall{ID: "call_1", Name: "file_capture",
		Arguments: json.RawMessage(`{"text":` + mustJSON(req.Message) + `,"bucket":"People","confidence":0.9,"status":"classified"}`)}
	r := &filerRun{ctx: ctx, hang: p.hang, events: []brainwire.AgentEvent{
		{Kind: brainwire.AgentToolCall, ThreadID: "up-thread", RunID: "up-run", Tool: call},
		{Kind: brainwire.AgentRunStatus, ThreadID: "up-thread", RunID: "up-run", Status: brainwire.RunRequiresAction},
	}}
	return r, nil
}

type filerRun struct {
	ctx    context.Context
	hang   bool
	events []brainwire.AgentEvent
}

func (r *filerRun) Next() (brainwire.AgentEvent, error) {
	if r.hang {
		<-r.ctx.Done()
		return brainwire.AgentEvent{}, r.ctx.Err()
	}
	if len(r.events) == 0 {
		return brainwire.AgentEvent{}, io.EOF
	}
	ev := r.events[0]
	r.events = r.events[1:]
	return ev, nil
}

func (r *filerRun) Continue([]brainwire.ToolResult) error {
	r.events = []brainwire.AgentEvent{{Kind: brainwire.AgentRunStatus, ThreadID: "up-thread", RunID: "up-run", Status: brainwire.RunCompleted}}
	return nil
}

func (r *filerRun) Close()         {}
func (r *filerRun) String() string { return "run up-run" }

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// ended counts the captures observers were told ended.
type ended struct{ n atomic.Int32 }

func (o *ended) StartCapture(ctx context.Context, _ brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return ctx, o
}
func (o *ended) ProviderEvent(brainwire.AgentEvent)  {}
func (o *ended) CaptureEvent(brainwire.CaptureEvent) {}
func (o *ended) End(brainwire.CaptureResult)         { o.n.Add(1) }

func newService(t *testing.T, p brainwire.Provider, obs brainwire.Observer) *capture.Service {
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "capture.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	n := 0
	return capture.New(capture.Config{Provider: p, Store: store, Observer: obs, RunTimeout: 5 * time.Second,
		NewID: func() string { n++; return fmt.Sprint("id", n) }, Now: time.Now})
}

func text(s string) brainwire.Capture {
	return brainwire.Capture{Kind: brainwire.KindText, UserID: "u", ThreadID: "thread-1", RunID: "run-1", Text: s}
}

func types(run *capture.Run) (out []string) {
	for ev := range run.Events() {
		out = append(out, ev.Type.String())
	}
	return out
}

// TestACaptureFilesOnceUnderItsKey: a capture runs the agent and files;
// its repeat under the key replays the outcome without running anything;
// another request under the key is refused.
func TestACaptureFilesOnceUnderItsKey(t *testing.T) {
	p := &filer{}
	s := newService(t, p, nil)
	req := capture.Request{Capture: text("Call Sarah"), Key: "k1", Fingerprint: "f1"}
	run, err := s.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(types(run))
	res := run.Result()
	if got != "[step_start tool_call tool_result step_end outcome complete]" || res.Outcome != brainwire.OutcomeClassified || res.InboxItemID == "" || run.Replayed() {
		t.Fatalf("events %s, result %+v", got, res)
	}
	again, err := s.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(types(again)); !again.Replayed() || got != "[step_start step_end outcome complete]" ||
		again.Result().InboxItemID != res.InboxItemID || p.starts.Load() != 1 {
		t.Fatalf("repeat: replayed %v, events %s, result %+v, %d runs", again.Replayed(), got, again.Result(), p.starts.Load())
	}
	req.Fingerprint = "f2"
	if _, err := s.Start(t.Context(), req); brainwire.ErrorCode(err) != capture.EKeyReused {
		t.Fatalf("another request under the key: %v", err)
	}
}

// TestAConsumerThatStopsStopsTheRun: a consumer that takes no more events
// (its client went away) stops the run; the capture still ends, for its
// observers and its key, which a retry then takes afresh.
func TestAConsumerThatStopsStopsTheRun(t *testing.T) {
	obs := &ended{}
	s := newService(t, &filer{hang: true}, obs)
	req := capture.Request{Capture: text("Call Sarah"), Key: "k1", Fingerprint: "f1"}
	run, err := s.Start(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range run.Events() {
			break // STEP_START, then the client is gone
		}
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the run went on after its consumer stopped")
	}
	if obs.n.Load() != 1 || run.Result().Outcome != brainwire.OutcomeError {
		t.Fatalf("%d ends, result %+v", obs.n.Load(), run.Result())
	}
	if _, err := s.Start(t.Context(), req); err != nil {
		t.Fatalf("a retry under the key of a capture that filed nothing: %v", err)
	}
}
