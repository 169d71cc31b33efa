package foundry_test

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/foundry/foundrytest"
)

// recordedChunks returns the text chunks of the recorded send_email message.
func recordedChunks(b *testing.B) []string {
	var chunks []string
	for block := range strings.SplitSeq(recording(b, "send_email_stream_response.txt"), "\n\n") {
		if data, ok := strings.CutPrefix(block, "event: thread.message.delta\ndata: "); ok {
			ev, err := foundry.NewDecoder(strings.NewReader(foundrytest.Event{Name: "thread.message.delta", Data: data}.Wire() + "event: done\ndata: [DONE]\n\n")).Next()
			if err != nil {
				b.Fatal(err)
			}
			chunks = append(chunks, ev.Text)
		}
	}
	return chunks
}

// syntheticRun returns the two response bodies of a classification whose
// reasoning is n message deltas shaped like the recorded ones, and the
// number of upstream events they hold.
func syntheticRun(b *testing.B, n int) (bodies [][]byte, events int) {
	chunks := recordedChunks(b)
	c := foundrytest.NewClassify("thread_01", "run_01", n)
	for i := range c.Reasoning {
		c.Reasoning[i] = chunks[i%len(chunks)]
	}
	for _, evs := range [][]foundrytest.Event{c.Stream(), c.Continuation()} {
		var buf bytes.Buffer
		for _, ev := range evs {
			buf.WriteString(ev.Wire())
		}
		bodies = append(bodies, buf.Bytes())
		events += len(evs)
	}
	return bodies, events
}

// BenchmarkDecodeRun decodes a whole classification: 10,000 message deltas
// plus the run, step and tool-call events around them, over two responses.
func BenchmarkDecodeRun(b *testing.B) {
	bodies, events := syntheticRun(b, 10_000)
	var ms0, ms1 runtime.MemStats
	b.ReportAllocs()
	runtime.ReadMemStats(&ms0)
	for b.Loop() {
		for _, body := range bodies {
			d := foundry.NewDecoder(bytes.NewReader(body))
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
	runtime.ReadMemStats(&ms1)
	total := float64(b.N) * float64(events)
	b.ReportMetric(total/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/event")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/event")
}

// BenchmarkDecodeMessageDelta decodes one recorded thread.message.delta
// event after another: the steady state of a reasoning stream.
func BenchmarkDecodeMessageDelta(b *testing.B) {
	ev := foundrytest.MessageDelta("msg_01", " email")
	for _, tt := range []struct{ name, wire string }{
		{"lf", ev.Wire()},
		{"crlf", strings.ReplaceAll(ev.Wire(), "\n", "\r\n")},
		{"escaped", foundrytest.MessageDelta("msg_01", "25\uFFFDC\n\n- \"Date\"").Wire()},
	} {
		b.Run(tt.name, func(b *testing.B) {
			d := foundry.NewDecoder(&loopReader{b: []byte(tt.wire)})
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
