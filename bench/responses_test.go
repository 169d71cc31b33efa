package bench

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adapter"
	"github.com/brainwire/brainwire/protocol/capturev2"
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

// responsesPipeline runs both bodies through decoder -> adapter ->
// encoder, feeding the tool result the provider would produce.
func responsesPipeline(tb testing.TB, first, second []byte, out []byte, evs []brainwire.CaptureEvent) (int, []byte) {
	a := adapter.New(brainwire.Capture{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"})
	var enc capturev2.Encoder
	frames := 0
	evs = a.Start(evs[:0])
	for _, body := range [][]byte{first, second} {
		dec := responses.NewDecoder(bytes.NewReader(body))
		for {
			ev, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				tb.Fatal(err)
			}
			evs = a.Handle(ev, evs[:0])
			if ev.Kind == brainwire.EventToolCall {
				evs = a.Handle(brainwire.Event{Kind: brainwire.EventToolResult, Tool: ev.Tool,
					Result: brainwire.ToolResult{CallID: ev.Tool.ID, Name: ev.Tool.Name, Filed: &filed,
						Output: `{"bucket":"People","confidence":0.9,"item_id":"item_1","status":"classified"}`}}, evs)
			}
			out = out[:0]
			for _, ce := range evs {
				out = enc.Encode(out, ce)
			}
			frames += len(evs)
		}
	}
	if !a.Done() || a.Result().Outcome != brainwire.OutcomeClassified {
		tb.Fatalf("run did not complete with an outcome (outcome %q)", a.Result().Outcome)
	}
	return frames, out
}

// BenchmarkResponsesAdapterPath: upstream Responses API SSE bytes ->
// normalized events -> capture events -> capture-v2 bytes, over 10,000
// reasoning summary deltas plus the lifecycle, item and function call
// events around them and the closing response. Run with -cpu 1.
func BenchmarkResponsesAdapterPath(b *testing.B) {
	for _, sentences := range []bool{false, true} {
		name := "token-deltas"
		if sentences {
			name = "sentence-deltas"
		}
		b.Run(name, func(b *testing.B) {
			first, second, events := responsesRun(10000, sentences)
			out := make([]byte, 0, 4096)
			evs := make([]brainwire.CaptureEvent, 0, 16)
			b.SetBytes(int64(len(first) + len(second)))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				_, out = responsesPipeline(b, first, second, out, evs)
			}
			cpu := cpuTime() - cpu0
			b.StopTimer()
			b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.N*events)/cpu.Seconds(), "events/cpu-s")
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*events), "ns/event")
			b.ReportMetric(float64(testing.AllocsPerRun(1, func() { _, out = responsesPipeline(b, first, second, out, evs) }))/float64(events), "allocs/event")
		})
	}
}

// TestResponsesPathAllocations bounds allocations per upstream event: one
// for each reasoning chunk's text and a little for the rare lifecycle
// events.
func TestResponsesPathAllocations(t *testing.T) {
	first, second, events := responsesRun(2000, false)
	out := make([]byte, 0, 4096)
	evs := make([]brainwire.CaptureEvent, 0, 16)
	allocs := testing.AllocsPerRun(5, func() {
		_, out = responsesPipeline(t, first, second, out, evs)
	})
	if perEvent := allocs / float64(events); perEvent > 1.5 {
		t.Fatalf("%.2f allocations per upstream event", perEvent)
	}
}
