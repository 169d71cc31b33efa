package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/agent"
)

// scripted is a provider whose run streams the responses it is given, one
// per Start or Continue, and notes what the loop asked of it.
type scripted struct {
	responses [][]brainwire.AgentEvent
	startErr  error
	// fail, when set, is returned by Next after the events of the
	// response numbered failAt.
	fail   error
	failAt int

	started   []brainwire.RunRequest
	continued [][]brainwire.ToolResult
	nexts     int
	closed    int
}

func (p *scripted) Name() string { return "scripted" }

func (p *scripted) Start(_ context.Context, req brainwire.RunRequest) (brainwire.Run, error) {
	p.started = append(p.started, req)
	if p.startErr != nil {
		return nil, p.startErr
	}
	return &scriptedRun{p: p}, nil
}

type scriptedRun struct {
	p        *scripted
	response int // the response being streamed
	next     int // its next event
}

func (r *scriptedRun) Next() (brainwire.AgentEvent, error) {
	r.p.nexts++
	if r.response >= len(r.p.responses) {
		return brainwire.AgentEvent{}, fmt.Errorf("no response %d in the script", r.response)
	}
	evs := r.p.responses[r.response]
	if r.next < len(evs) {
		r.next++
		return evs[r.next-1], nil
	}
	if r.p.fail != nil && r.response == r.p.failAt {
		return brainwire.AgentEvent{}, r.p.fail
	}
	return brainwire.AgentEvent{}, io.EOF
}

func (r *scriptedRun) Continue(results []brainwire.ToolResult) error {
	r.p.continued = append(r.p.continued, results)
	r.response, r.next = r.response+1, 0
	return nil
}

func (r *scriptedRun) Close()         { r.p.closed++ }
func (r *scriptedRun) String() string { return "run r1" }

// echo answers every call with {"ok":"<id>"}.
type echo struct{ defs []brainwire.ToolDefinition }

func (e echo) Definitions() []brainwire.ToolDefinition { return e.defs }
func (e echo) Call(_ context.Context, c brainwire.ToolCall) brainwire.ToolResult {
	return brainwire.ToolResult{Output: fmt.Sprintf(`{"ok":%q}`, c.ID)}
}

func status(s brainwire.RunStatus) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: brainwire.AgentRunStatus, ThreadID: "t1", RunID: "r1", Status: s}
}

func call(id string) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: brainwire.AgentToolCall, ThreadID: "t1", RunID: "r1",
		Tool: brainwire.ToolCall{ID: id, Name: brainwire.ToolFileCapture, ThreadID: "t1", RunID: "r1"}}
}

func text(s string) brainwire.AgentEvent {
	return brainwire.AgentEvent{Kind: brainwire.AgentTextChunk, ThreadID: "t1", RunID: "r1", Text: s}
}

// asking is a response that asks for the calls ids.
func asking(ids ...string) []brainwire.AgentEvent {
	evs := []brainwire.AgentEvent{status(brainwire.RunInProgress), text("thinking")}
	for _, id := range ids {
		evs = append(evs, call(id))
	}
	return append(evs, status(brainwire.RunRequiresAction))
}

var completing = []brainwire.AgentEvent{status(brainwire.RunInProgress), text("done"), status(brainwire.RunCompleted)}

// run runs the loop and returns what it yielded, an event per line, and
// its error, checking that an error comes once, last, with a zero event.
func run(t *testing.T, ctx context.Context, l *agent.Loop, tools brainwire.ToolSet) (string, error) {
	t.Helper()
	var lines []string
	var final error
	for ev, err := range l.Run(ctx, brainwire.RunRequest{Message: "x"}, tools) {
		if final != nil {
			t.Fatalf("yielded after the error %v", final)
		}
		if err != nil {
			if !reflect.DeepEqual(ev, brainwire.AgentEvent{}) {
				t.Fatalf("error %v came with the event %+v", err, ev)
			}
			final = err
			continue
		}
		lines = append(lines, line(ev))
	}
	return strings.Join(lines, "\n"), final
}

func line(ev brainwire.AgentEvent) string {
	s := ev.Kind.String()
	switch ev.Kind {
	case brainwire.AgentRunStatus:
		s += " " + string(ev.Status)
	case brainwire.AgentToolCall:
		s += " " + ev.Tool.ID
	case brainwire.AgentToolResult:
		s += fmt.Sprintf(" %s [%s %s] %s", ev.Tool.ID, ev.ThreadID, ev.RunID, ev.Result.Output)
	}
	return s
}

func TestRunToolsAndContinue(t *testing.T) {
	p := &scripted{responses: [][]brainwire.AgentEvent{asking("c1", "c2"), completing}}
	defs := []brainwire.ToolDefinition{{Name: brainwire.ToolFileCapture}}
	got, err := run(t, t.Context(), agent.NewLoop(p), echo{defs: defs})
	if err != nil {
		t.Fatal(err)
	}
	want := `run_status in_progress
text_chunk
tool_call c1
tool_call c2
run_status requires_action
tool_result c1 [t1 r1] {"ok":"c1"}
tool_result c2 [t1 r1] {"ok":"c2"}
run_status in_progress
text_chunk
run_status completed`
	if got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	if len(p.started) != 1 || !reflect.DeepEqual(p.started[0].Tools, defs) {
		t.Errorf("started with %+v, want the tools' definitions", p.started)
	}
	if len(p.continued) != 1 || len(p.continued[0]) != 2 || p.continued[0][0].CallID != "c1" || p.continued[0][1].Name != brainwire.ToolFileCapture {
		t.Errorf("continued with %+v: want each call's result, in order, naming its call", p.continued)
	}
	if p.closed != 1 {
		t.Errorf("closed %d times", p.closed)
	}
}

// The results are yielded before the run continues: the phone can be
// told the outcome while the agent writes its closing words.
func TestRunYieldsResultsBeforeContinuing(t *testing.T) {
	p := &scripted{responses: [][]brainwire.AgentEvent{asking("c1"), completing}}
	for ev, err := range agent.NewLoop(p).Run(t.Context(), brainwire.RunRequest{}, echo{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == brainwire.AgentToolResult && len(p.continued) != 0 {
			t.Fatal("the run continued before the result was yielded")
		}
	}
}

func TestRunEnds(t *testing.T) {
	errBroke := &brainwire.Error{Code: brainwire.EUpstream, Message: "the stream broke off"}
	for _, tc := range []struct {
		name      string
		p         *scripted
		err       string // in the error; "" for none
		continued int
	}{
		{name: "completed", p: &scripted{responses: [][]brainwire.AgentEvent{completing}}},
		{name: "failed", p: &scripted{responses: [][]brainwire.AgentEvent{{status(brainwire.RunInProgress), status(brainwire.RunFailed)}}}},
		{name: "an error event", p: &scripted{responses: [][]brainwire.AgentEvent{{status(brainwire.RunInProgress), {Kind: brainwire.AgentError}}}}},
		{name: "an error event after the calls", p: &scripted{responses: [][]brainwire.AgentEvent{append(asking("c1"), brainwire.AgentEvent{Kind: brainwire.AgentError})}}},
		{
			name: "the stream ends while the run goes on",
			p:    &scripted{responses: [][]brainwire.AgentEvent{{status(brainwire.RunInProgress), text("a")}}},
			err:  `the stream of run r1 ended while it was "in_progress"`,
		},
		{
			name: "requires action without calls",
			p:    &scripted{responses: [][]brainwire.AgentEvent{{status(brainwire.RunRequiresAction)}}},
			err:  "run r1 requires action but asked for no function calls",
		},
		{
			name:      "the stream breaks",
			p:         &scripted{responses: [][]brainwire.AgentEvent{asking("c1"), {text("a")}}, fail: errBroke, failAt: 1},
			err:       "the stream broke off",
			continued: 1,
		},
		{name: "the run cannot start", p: &scripted{startErr: errBroke}, err: "the stream broke off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, t.Context(), agent.NewLoop(tc.p), echo{})
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			case tc.err != "" && brainwire.ErrorCode(err) != brainwire.EUpstream:
				t.Errorf("error %v is not an upstream error", err)
			}
			if len(tc.p.continued) != tc.continued {
				t.Errorf("continued %d times, want %d", len(tc.p.continued), tc.continued)
			}
			if want := min(len(tc.p.started), 1); tc.p.startErr == nil && tc.p.closed != want {
				t.Errorf("closed %d times, want %d", tc.p.closed, want)
			}
		})
	}
}

func TestRunTooManyToolRounds(t *testing.T) {
	p := &scripted{}
	for i := range agent.MaxToolRounds + 2 {
		p.responses = append(p.responses, asking(fmt.Sprint("c", i)))
	}
	_, err := run(t, t.Context(), agent.NewLoop(p), echo{})
	var be *brainwire.Error
	if !errors.As(err, &be) || be.Message != "the agent kept asking for tools" || !strings.Contains(err.Error(), fmt.Sprintf("run r1 asked for tools more than %d times", agent.MaxToolRounds)) {
		t.Fatalf("error %v", err)
	}
	if len(p.continued) != agent.MaxToolRounds || p.closed != 1 {
		t.Errorf("continued %d times, closed %d times", len(p.continued), p.closed)
	}
}

// A consumer that stops iterating stops the run: nothing more is read,
// and the run is closed.
func TestRunConsumerStops(t *testing.T) {
	p := &scripted{responses: [][]brainwire.AgentEvent{asking("c1"), completing}}
	for ev := range agent.NewLoop(p).Run(t.Context(), brainwire.RunRequest{}, echo{}) {
		if ev.Kind == brainwire.AgentTextChunk {
			break
		}
	}
	if p.nexts != 2 || p.closed != 1 || len(p.continued) != 0 {
		t.Errorf("read %d events, closed %d times, continued %d times", p.nexts, p.closed, len(p.continued))
	}
}

// cancelling cancels the run's context from within its tools.
type cancelling struct{ cancel context.CancelFunc }

func (c cancelling) Definitions() []brainwire.ToolDefinition { return nil }
func (c cancelling) Call(context.Context, brainwire.ToolCall) brainwire.ToolResult {
	c.cancel()
	return brainwire.ToolResult{Output: "{}"}
}

// A run whose context ends while its tools run does not continue, and
// its error says why.
func TestRunCancelledDuringTools(t *testing.T) {
	p := &scripted{responses: [][]brainwire.AgentEvent{asking("c1"), completing}}
	ctx, cancel := context.WithCancel(t.Context())
	got, err := run(t, ctx, agent.NewLoop(p), cancelling{cancel})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "agent run r1 stopped") {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(got, "tool_result") || len(p.continued) != 0 || p.closed != 1 {
		t.Errorf("events\n%s\ncontinued %d times, closed %d times", got, len(p.continued), p.closed)
	}
}

func TestRunThatNeverStartedStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p := &scripted{startErr: errors.New("dial: operation was canceled")}
	_, err := run(t, ctx, agent.NewLoop(p), nil)
	if !errors.Is(err, context.Canceled) || err.Error() != "agent run stopped: context canceled" {
		t.Fatalf("error %v", err)
	}
}

// Without tools, the agent is offered none, and a call it makes anyway
// gets an error result.
func TestRunWithoutTools(t *testing.T) {
	p := &scripted{responses: [][]brainwire.AgentEvent{asking("c1"), completing}}
	got, err := run(t, t.Context(), agent.NewLoop(p), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.started[0].Tools != nil || !strings.Contains(got, `tool_result c1 [t1 r1] {"error":"unknown_tool"`) {
		t.Errorf("started with tools %v; events\n%s", p.started[0].Tools, got)
	}
}
