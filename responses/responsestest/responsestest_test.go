package responsestest_test

import (
	"encoding/json"
	"strings"
	"testing"

	rt "github.com/brainwire/brainwire/responses/responsestest"
)

// TestTurnNumbersEvents: every event's data names its type as the event
// line does, and sequence numbers run 0, 1, 2, ...
func TestTurnNumbersEvents(t *testing.T) {
	evs := rt.NewTurn("resp_1", rt.InConversation("conv_1")).Reasoning("rs", "a", "b").Message("m", "c").
		FunctionCall("fc", "call", "f", `{"x":"李明"}`).Complete(rt.Usage{Input: 1, Output: 2, Reasoning: 1}).Events()
	for i, ev := range evs {
		var d struct {
			Type string `json:"type"`
			Seq  *int   `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
			t.Fatal(err)
		}
		if d.Type != ev.Name || d.Seq == nil || *d.Seq != i {
			t.Fatalf("event %d: %s %s", i, ev.Name, ev.Data)
		}
	}
	if w := evs[0].WireCRLF(); !strings.HasPrefix(w, "event: response.created\r\ndata: {") || !strings.HasSuffix(w, "}\r\n\r\n") {
		t.Fatalf("CRLF wire %q", w)
	}
}
