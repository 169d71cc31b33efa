package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/agent"
)

// journalTools notes when each call starts and ends. A call whose
// arguments are {"slow":true} takes a second of the bubble's clock, and
// one named "wait" blocks until a call named "signal" has started.
type journalTools struct {
	mu      sync.Mutex
	journal []string
	signal  chan struct{}
}

func (j *journalTools) Definitions() []brainwire.ToolDefinition { return nil }

func (j *journalTools) note(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.journal = append(j.journal, s)
}

func (j *journalTools) Call(ctx context.Context, call brainwire.ToolCall) brainwire.ToolResult {
	j.note("start " + call.ID)
	switch {
	case call.Name == "signal":
		close(j.signal)
	case call.Name == "wait":
		<-j.signal
	case strings.Contains(string(call.Arguments), `"slow":true`):
		time.Sleep(time.Second)
	}
	j.note("end " + call.ID)
	return brainwire.ToolResult{CallID: call.ID, Name: call.Name, Output: `{"ok":true}`}
}

func calls(specs ...string) []brainwire.ToolCall {
	var out []brainwire.ToolCall
	for i, s := range specs {
		name, args, _ := strings.Cut(s, " ")
		if args == "" {
			args = "{}"
		}
		out = append(out, brainwire.ToolCall{ID: fmt.Sprintf("call_%d", i+1), Name: name, Arguments: json.RawMessage(args)})
	}
	return out
}

// Calls to one tool run one after another in the agent's order, even when
// the first is the slow one: which of two file_capture calls files the
// capture never depends on timing.
func TestCallToolsRunsCallsOfOneToolInTheAgentsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &journalTools{}
		res := agent.CallTools(t.Context(), j, calls(`file_capture {"slow":true}`, "file_capture", "file_capture"))
		want := []string{"start call_1", "end call_1", "start call_2", "end call_2", "start call_3", "end call_3"}
		if !slices.Equal(j.journal, want) {
			t.Fatalf("journal %q, want %q", j.journal, want)
		}
		for i, r := range res {
			if r.CallID != fmt.Sprintf("call_%d", i+1) {
				t.Errorf("result %d is for %s", i, r.CallID)
			}
		}
	})
}

// Calls to different tools still run at the same time: "wait" returns
// only once "signal" has started, which would never happen one by one.
func TestCallToolsRunsDifferentToolsConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &journalTools{signal: make(chan struct{})}
		res := agent.CallTools(t.Context(), j, calls("wait", "signal"))
		if len(res) != 2 || res[0].CallID != "call_1" || res[1].CallID != "call_2" {
			t.Fatalf("results %+v", res)
		}
	})
}

type panickingTools struct{}

func (panickingTools) Definitions() []brainwire.ToolDefinition { return nil }
func (panickingTools) Call(context.Context, brainwire.ToolCall) brainwire.ToolResult {
	panic("tool bug")
}

func TestCallToolsTurnsPanicsAndNoToolsIntoErrorResults(t *testing.T) {
	for name, set := range map[string]brainwire.ToolSet{"panic": panickingTools{}, "nil set": nil} {
		res := agent.CallTools(context.Background(), set, calls("file_capture", "file_capture", "transcribe_audio"))
		for i, r := range res {
			if !r.IsError || r.CallID != fmt.Sprintf("call_%d", i+1) || r.Name == "" {
				t.Errorf("%s: result %d = %+v", name, i, r)
			}
		}
	}
}

// Once the run is cancelled, calls still waiting for their turn are not
// started.
func TestCallToolsStartsNoCallAfterCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		j := &journalTools{}
		go func() {
			time.Sleep(500 * time.Millisecond) // during the first, slow call
			cancel()
		}()
		res := agent.CallTools(ctx, j, calls(`file_capture {"slow":true}`, "file_capture"))
		if want := []string{"start call_1", "end call_1"}; !slices.Equal(j.journal, want) {
			t.Errorf("journal %q, want %q", j.journal, want)
		}
		if !res[1].IsError || res[1].ErrorCode != "canceled" || res[1].CallID != "call_2" {
			t.Errorf("the call that never ran: %+v", res[1])
		}
	})
}
