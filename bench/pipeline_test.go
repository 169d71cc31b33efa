// Package bench measures brainwire's hot paths end to end. Figures and the
// commands that produced them are kept in RESULTS.md.
package bench

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adapter"
	"github.com/brainwire/brainwire/foundry"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/protocol/agui"
	"github.com/brainwire/brainwire/protocol/capturev2"
	"github.com/brainwire/brainwire/protocol/v1"
)

// tokens are delta texts the size a model streams them (as in the
// recordings: "The", " current", " weather", ...).
var tokens = strings.Fields("The capture mentions calling Sarah about the offsite next week , " +
	"which is about a person in their life ; the People bucket fits best with high confidence .")

// longRun is a recorded-shape run: the create-run stream with n reasoning
// deltas around the run, step and tool-call events, and the continuation
// after the tool output. It returns both bodies and their event count.
// With sentences set, each delta is a ~50-byte sentence instead.
func longRun(n int, sentences bool) (first, second []byte, events int) {
	c := ft.NewClassify("thread_01", "run_01", n)
	for i := range c.Reasoning {
		if !sentences {
			c.Reasoning[i] = " " + tokens[i%len(tokens)]
		}
	}
	wire := func(evs []ft.Event) []byte {
		var b strings.Builder
		for _, e := range evs {
			b.WriteString(e.Wire())
		}
		return []byte(b.String())
	}
	s, k := c.Stream(), c.Continuation()
	return wire(s), wire(k), len(s) + len(k)
}

// filed is file_capture's result as the tools hand it over.
var filed = brainwire.FileCaptureResult{Bucket: "People", Confidence: 0.9, ItemID: "item_1", Status: brainwire.StatusClassified}

// encoder is what the server asks of a protocol's encoder.
type encoder interface {
	Encode(dst []byte, ev brainwire.CaptureEvent) []byte
}

// captureV2 makes the phone's protocol's encoder.
func captureV2(brainwire.Capture) encoder { return capturev2.Encoder{} }

// encoders are the protocols a capture can be streamed in, as the server
// makes them for each capture.
var encoders = []struct {
	name string
	new  func(brainwire.Capture) encoder
}{
	{"capture-v2", captureV2},
	// What HttpAgent asks for by default: state, no reasoning.
	{"agui", func(c brainwire.Capture) encoder { return agui.NewEncoder(c, agui.Options{State: true}) }},
	{"agui-reasoning", func(c brainwire.Capture) encoder {
		return agui.NewEncoder(c, agui.Options{State: true, Reasoning: true})
	}},
	{"v1", func(c brainwire.Capture) encoder { return v1.NewEncoder(c) }},
}

// decoder reads the normalized events of one upstream response body.
type decoder interface {
	Next() (brainwire.AgentEvent, error)
}

// adapterPath is what sets one upstream's adapter-path benchmark apart:
// the run it streams and the decoder of its wire. The rest of the path
// (adapter, encoder) and what is measured are the same for every one.
type adapterPath struct {
	// run returns the two response bodies of a classification with n
	// reasoning chunks (token-sized, or ~50-byte sentences) and their
	// event count.
	run func(n int, sentences bool) (first, second []byte, events int)
	// decoder reads one of those bodies.
	decoder func(io.Reader) decoder
}

// threadsPath is the classic Agents API's (threads/runs).
var threadsPath = adapterPath{
	run:     longRun,
	decoder: func(r io.Reader) decoder { return foundry.NewDecoder(r) },
}

// pipeline runs both bodies through decoder -> adapter -> encoder, the
// path every upstream event takes on its way to the client. The tool
// result the provider would produce is fed in at the tool call.
func (p adapterPath) pipeline(tb testing.TB, newEncoder func(brainwire.Capture) encoder, first, second []byte, out []byte, evs []brainwire.CaptureEvent) (int, []byte) {
	c := brainwire.Capture{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1"}
	a := adapter.New(c)
	enc := newEncoder(c)
	frames := 0
	evs = a.Start(evs[:0])
	for _, body := range [][]byte{first, second} {
		dec := p.decoder(bytes.NewReader(body))
		for {
			ev, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				tb.Fatal(err)
			}
			evs = a.Handle(ev, evs[:0])
			if ev.Kind == brainwire.AgentToolCall {
				evs = a.Handle(brainwire.AgentEvent{Kind: brainwire.AgentToolResult, Tool: ev.Tool,
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

// bench measures a run of 10,000 reasoning chunks through the path into
// newEncoder's protocol: besides ns/op, MB/s, B/op and allocs/op, it
// reports events/s, events/cpu-s, ns/event and
// allocs/event, per upstream event.
func (p adapterPath) bench(b *testing.B, sentences bool, newEncoder func(brainwire.Capture) encoder) {
	first, second, events := p.run(10000, sentences)
	out := make([]byte, 0, 4096)
	evs := make([]brainwire.CaptureEvent, 0, 16)
	b.SetBytes(int64(len(first) + len(second)))
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		_, out = p.pipeline(b, newEncoder, first, second, out, evs)
	}
	cpu = cpuTime() - cpu
	b.StopTimer()
	b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
	if cpu > 0 {
		b.ReportMetric(float64(b.N*events)/cpu.Seconds(), "events/cpu-s")
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*events), "ns/event")
	b.ReportMetric(float64(testing.AllocsPerRun(1, func() { _, out = p.pipeline(b, newEncoder, first, second, out, evs) }))/float64(events), "allocs/event")
}

// maxAllocsPerEvent bounds the allocations per upstream event of every
// adapter path: what the providers' JSON decoder takes to read an event
// into its wire type (2.2 for a threads/runs message delta, 4.2 for an ADK
// chunk, 2.2 for a Responses text delta), with a margin: under -race,
// where sync.Pool drops what it holds, the ADK path measures 7.5.
const maxAllocsPerEvent = 10

// allocsPerEvent is the allocations per upstream event of a run of 2,000
// token-sized reasoning chunks into newEncoder's protocol.
func (p adapterPath) allocsPerEvent(t *testing.T, newEncoder func(brainwire.Capture) encoder) float64 {
	first, second, events := p.run(2000, false)
	out := make([]byte, 0, 4096)
	evs := make([]brainwire.CaptureEvent, 0, 16)
	allocs := testing.AllocsPerRun(5, func() {
		_, out = p.pipeline(t, newEncoder, first, second, out, evs)
	})
	return allocs / float64(events)
}

// paths are the upstreams a capture can stream from. Every one runs into
// each protocol: what sets them apart is the decoder.
var paths = []struct {
	name string
	adapterPath
}{{"threads", threadsPath}, {"responses", responsesPath}, {"adk", adkPath}}

// BenchmarkAdapterPath: upstream SSE bytes -> normalized events -> capture
// events -> the bytes of each protocol, over 10,000 reasoning deltas
// (token-sized, or ~50-byte sentences) plus the run, step and tool-call
// events around them. Run with -cpu 1 for the one-core figure.
func BenchmarkAdapterPath(b *testing.B) {
	for _, p := range paths {
		for _, e := range encoders {
			for _, sentences := range []bool{false, true} {
				name := p.name + "/" + e.name + "/token-deltas"
				if sentences {
					name = p.name + "/" + e.name + "/sentence-deltas"
				}
				b.Run(name, func(b *testing.B) { p.bench(b, sentences, e.new) })
			}
		}
	}
}

// TestAdapterPathAllocations bounds allocations per upstream event from
// every upstream into every protocol.
func TestAdapterPathAllocations(t *testing.T) {
	for _, p := range paths {
		for _, e := range encoders {
			if perEvent := p.allocsPerEvent(t, e.new); perEvent > maxAllocsPerEvent {
				t.Errorf("%s -> %s: %.2f allocations per upstream event", p.name, e.name, perEvent)
			}
		}
	}
}
