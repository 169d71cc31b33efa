package bench

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adapter"
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/adk/adktest"
	"github.com/brainwire/brainwire/protocol/capturev2"
)

// adkRun is a classification as an ADK API server streams it: the first
// /run_sse body with n thought chunks, the file_capture call's partial
// and aggregated events; the resumed run's answer. It returns both bodies
// and their event count. With sentences set, each thought is a ~50-byte
// sentence instead of a token.
func adkRun(n int, sentences bool) (first, second []byte, events int) {
	thoughts := make([]string, n)
	for i := range thoughts {
		thoughts[i] = " " + tokens[i%len(tokens)]
		if sentences {
			thoughts[i] = " The capture names a person and a date; People fits."
		}
	}
	call := adktest.Turn{InvocationID: "e-0b7c6a2e-5d1f-4c8e-9a3b-2f6d1e0c9b8a", EventID: "9d1e4f2a-7b3c-4d5e-8f6a-1b2c3d4e5f6a",
		Thoughts: thoughts,
		Calls:    []adktest.FunctionCall{{ID: "adk-3f0d6c1e-5b8a-4c8e-9c51-2d7a0b6e9f11", Name: "file_capture", Args: `{"text":"Call Sarah","bucket":"People","confidence":0.9,"status":"classified"}`}},
		Usage:    &adktest.Usage{Prompt: 412, Candidates: 41, Thoughts: 88, Total: 541}}
	answer := adktest.Turn{InvocationID: call.InvocationID, EventID: "41aa0c9e-3b2d-4f1a-8e7c-6d5b4a3c2b1a",
		Texts: []string{"Filed", " to", " People."}, Usage: &adktest.Usage{Prompt: 590, Candidates: 9, Total: 599}}
	wire := func(fs []adktest.Frame) []byte {
		var b strings.Builder
		for _, f := range fs {
			b.WriteString(f.Wire())
		}
		return []byte(b.String())
	}
	c, a := call.Frames(), answer.Frames()
	return wire(c), wire(a), len(c) + len(a)
}

// adkPipeline runs both bodies through the ADK decoder, the adapter and
// the capture-v2 encoder, feeding in the tool result the provider would.
func adkPipeline(tb testing.TB, first, second []byte, out []byte, evs []brainwire.CaptureEvent) (int, []byte) {
	a := adapter.New(brainwire.Capture{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"})
	var enc capturev2.Encoder
	frames := 0
	evs = a.Start(evs[:0])
	for _, body := range [][]byte{first, second} {
		dec := adk.NewDecoder(bytes.NewReader(body))
		dec.SetSession("5b0d7a56-3c1e-4a3b-9f57-2f1f0c9c7e11", "")
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

// BenchmarkAdapterPathADK: the ADK stream's bytes -> normalized events ->
// capture events -> capture-v2 bytes, over 10,000 thought chunks and the
// events around them. Run with -cpu 1 for the one-core figure.
func BenchmarkAdapterPathADK(b *testing.B) {
	for _, sentences := range []bool{false, true} {
		name := "token-thoughts"
		if sentences {
			name = "sentence-thoughts"
		}
		b.Run(name, func(b *testing.B) {
			first, second, events := adkRun(10000, sentences)
			out := make([]byte, 0, 4096)
			evs := make([]brainwire.CaptureEvent, 0, 16)
			b.SetBytes(int64(len(first) + len(second)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, out = adkPipeline(b, first, second, out, evs)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*events), "ns/event")
			b.ReportMetric(float64(testing.AllocsPerRun(1, func() { _, out = adkPipeline(b, first, second, out, evs) }))/float64(events), "allocs/event")
		})
	}
}

// TestAdapterPathADKAllocations bounds allocations per upstream event as
// for Foundry: the reasoning chunk's text, and a little for the rest.
func TestAdapterPathADKAllocations(t *testing.T) {
	first, second, events := adkRun(2000, false)
	out := make([]byte, 0, 4096)
	evs := make([]brainwire.CaptureEvent, 0, 16)
	allocs := testing.AllocsPerRun(5, func() {
		_, out = adkPipeline(t, first, second, out, evs)
	})
	if perEvent := allocs / float64(events); perEvent > 1.5 {
		t.Fatalf("%.2f allocations per upstream event", perEvent)
	}
}
