package adk_test

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/adk/adktest"
)

// benchTokens are thought chunks the size a model streams them.
var benchTokens = strings.Fields("The capture mentions calling Sarah about the offsite next week , " +
	"which is about a person in their life ; the People bucket fits best with high confidence .")

// syntheticRun returns the two /run_sse bodies of a classification whose
// thinking streams as n thought chunks (token-sized, or ~50-byte
// sentences), shaped as the API server sends them, and their event count.
func syntheticRun(n int, sentences bool) (bodies [][]byte, events int) {
	thoughts := make([]string, n)
	for i := range thoughts {
		thoughts[i] = " " + benchTokens[i%len(benchTokens)]
		if sentences {
			thoughts[i] = " The capture names a person and a date; People fits."
		}
	}
	first := adktest.Turn{InvocationID: "e-0b7c6a2e-5d1f-4c8e-9a3b-2f6d1e0c9b8a", EventID: "9d1e4f2a-7b3c-4d5e-8f6a-1b2c3d4e5f6a",
		Thoughts: thoughts,
		Calls:    []adktest.FunctionCall{{ID: "adk-3f0d6c1e-5b8a-4c8e-9c51-2d7a0b6e9f11", Name: "file_capture", Args: `{"text":"Call Sarah","bucket":"People","confidence":0.9,"status":"classified"}`}},
		Usage:    &adktest.Usage{Prompt: 412, Candidates: 41, Thoughts: 88, Total: 541}}
	second := adktest.Turn{InvocationID: first.InvocationID, EventID: "41aa0c9e-3b2d-4f1a-8e7c-6d5b4a3c2b1a",
		Texts: []string{"Filed", " to", " People."}, Usage: &adktest.Usage{Prompt: 590, Candidates: 9, Total: 599}}
	for _, tr := range []adktest.Turn{first, second} {
		var b strings.Builder
		for _, f := range tr.Frames() {
			b.WriteString(f.Wire())
			events++
		}
		bodies = append(bodies, []byte(b.String()))
	}
	return bodies, events
}

// BenchmarkDecodeRun decodes a whole classification: 10,000 thought
// chunks, the call's partial and aggregated events, and the resumed run's
// answer, over two responses: bytes to brainwire events.
func BenchmarkDecodeRun(b *testing.B) {
	for _, sentences := range []bool{false, true} {
		name := "token-thoughts"
		if sentences {
			name = "sentence-thoughts"
		}
		b.Run(name, func(b *testing.B) {
			bodies, events := syntheticRun(10_000, sentences)
			b.SetBytes(int64(len(bodies[0]) + len(bodies[1])))
			var ms0, ms1 runtime.MemStats
			b.ReportAllocs()
			runtime.ReadMemStats(&ms0)
			cpu0 := cpuSeconds()
			for b.Loop() {
				for _, body := range bodies {
					d := adk.NewDecoder(bytes.NewReader(body))
					for {
						if _, err := d.Next(); err != nil {
							if err != io.EOF {
								b.Fatal(err)
							}
							break
						}
					}
				}
			}
			cpu := cpuSeconds() - cpu0
			runtime.ReadMemStats(&ms1)
			total := float64(b.N) * float64(events)
			b.ReportMetric(total/b.Elapsed().Seconds(), "events/s")
			if cpu > 0 {
				b.ReportMetric(total/cpu, "events/cpu-s")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/event")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/event")
		})
	}
}

// loopReader repeats b forever.
type loopReader struct {
	b []byte
	i int
}

func (r *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.i:])
		n += c
		r.i = (r.i + c) % len(r.b)
	}
	return n, nil
}

// BenchmarkDecodeThought decodes one streamed thought chunk after
// another: the steady state of a thinking model's stream.
func BenchmarkDecodeThought(b *testing.B) {
	chunk := func(text string) string {
		return adktest.Turn{InvocationID: "e-0b7c6a2e-5d1f-4c8e-9a3b-2f6d1e0c9b8a", EventID: "9d1e4f2a-7b3c-4d5e-8f6a-1b2c3d4e5f6a",
			Thoughts: []string{"x", text, "y"}}.Partials()[1].Wire()
	}
	for _, tt := range []struct{ name, wire string }{
		{"lf", chunk(" current")},
		{"crlf", strings.ReplaceAll(chunk(" current"), "\n", "\r\n")},
		{"escaped", chunk("25\uFFFDC\n\n- \"Date\" 🎂")},
	} {
		b.Run(tt.name, func(b *testing.B) {
			d := adk.NewDecoder(&loopReader{b: []byte(tt.wire)})
			d.Next() // in_progress
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Next(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// TestDecodeRunAllocations bounds allocations per upstream event: the
// text of each chunk, and a little for the rare aggregated events.
func TestDecodeRunAllocations(t *testing.T) {
	bodies, events := syntheticRun(2000, false)
	allocs := testing.AllocsPerRun(5, func() {
		for _, body := range bodies {
			d := adk.NewDecoder(bytes.NewReader(body))
			for {
				if _, err := d.Next(); err != nil {
					break
				}
			}
		}
	})
	if perEvent := allocs / float64(events); perEvent > 1.5 {
		t.Fatalf("%.2f allocations per upstream event", perEvent)
	}
}
