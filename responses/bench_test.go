package responses

import (
	"strings"
	"testing"
)

// loopReader repeats b forever.
type loopReader struct {
	b   []byte
	off int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m := copy(p[n:], l.b[l.off:])
		l.off = (l.off + m) % len(l.b)
		n += m
	}
	return n, nil
}

// BenchmarkDecodeTextDelta decodes one text delta event after another,
// the steady state of a reasoning stream, in the layout the service
// sends: a token-sized delta (lf and crlf), and one with escapes, which
// are unquoted.
func BenchmarkDecodeTextDelta(b *testing.B) {
	frame := "event: response.reasoning_summary_text.delta\n" +
		`data: {"type":"response.reasoning_summary_text.delta","sequence_number":412,"item_id":"rs_67ccd2bf1e7c8190a2e1","output_index":0,"summary_index":0,"delta":" current","obfuscation":"q3ZtA1x"}` + "\n\n"
	escaped := "event: response.output_text.delta\n" +
		`data: {"type":"response.output_text.delta","sequence_number":9,"item_id":"msg_67ccd2bf1e7c8190a2e1","output_index":1,"content_index":0,"delta":"**Filed**\n\n- \"People\" \u00e9","logprobs":[]}` + "\n\n"
	for _, tt := range []struct{ name, wire string }{
		{"lf", frame},
		{"crlf", strings.ReplaceAll(frame, "\n", "\r\n")},
		{"escaped", escaped},
	} {
		b.Run(tt.name, func(b *testing.B) {
			d := NewDecoder(&loopReader{b: []byte(tt.wire)})
			b.SetBytes(int64(len(tt.wire)))
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
