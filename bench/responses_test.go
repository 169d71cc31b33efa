package bench

import (
	"bytes"
	"io"

	"github.com/brainwire/brainwire/responses"
	rt "github.com/brainwire/brainwire/responses/responsestest"
)

// responsesRun is a capture's two responses as the Responses API streams
// them: n reasoning summary deltas (token-sized, or ~50-byte sentences)
// and a file_capture call, then the closing message after the tool
// output. It returns both bodies and their event count.
func responsesRun(n int, sentences bool) (first, second []byte, events int) {
	deltas := make([]string, n)
	for i := range deltas {
		deltas[i] = " " + tokens[i%len(tokens)]
		if sentences {
			deltas[i] = " The capture mentions calling Sarah next week, so People."
		}
	}
	conv := rt.InConversation("conv_01")
	a := rt.NewTurn("resp_01", conv).Reasoning("rs_01", deltas...).
		FunctionCall("fc_01", "call_01", "file_capture", `{"text":"Call Sarah about the offsite","bucket":"People","confidence":0.9,"status":"classified","title":"Sarah"}`).
		Complete(rt.Usage{Input: 1200, Output: int64(n) + 40, Reasoning: int64(n)}).Events()
	b := rt.NewTurn("resp_02", conv, rt.After("resp_01")).Message("msg_02", "Filed", " to", " People.").Complete(rt.Usage{Input: 1300, Output: 4}).Events()
	wire := func(evs []rt.Event) []byte {
		var buf bytes.Buffer
		for _, e := range evs {
			buf.WriteString(e.Wire())
		}
		return buf.Bytes()
	}
	return wire(a), wire(b), len(a) + len(b)
}

// responsesPath is the Responses API's.
var responsesPath = adapterPath{
	run:     responsesRun,
	decoder: func(r io.Reader) decoder { return responses.NewDecoder(r) },
}
