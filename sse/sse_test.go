package sse_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/brainwire/brainwire/internal/recordings"

	"github.com/brainwire/brainwire/sse"
)

type rec struct{ name, data string }

// readAll reads every event of r, copying the aliased slices.
func readAll(t *testing.T, r *sse.Reader) ([]rec, error) {
	t.Helper()
	var out []rec
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, rec{string(ev.Name), string(ev.Data)})
	}
}

// expectedFromRecording parses a recording the simple way its README
// describes: blocks separated by a blank line, each one "event: " line and
// one "data: " line.
func expectedFromRecording(t *testing.T, text string) []rec {
	t.Helper()
	var out []rec
	for _, block := range strings.Split(strings.TrimRight(text, "\n"), "\n\n") {
		lines := strings.Split(block, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("recording block not in the expected shape: %q", block)
		}
		out = append(out, rec{strings.TrimPrefix(lines[0], "event: "), strings.TrimPrefix(lines[1], "data: ")})
	}
	return out
}

func recorded(t testing.TB) map[string]string {
	t.Helper()
	out := make(map[string]string)
	for _, name := range recordings.Names {
		out[name] = string(recordings.Read(t, name))
	}
	return out
}

// chunkReader returns its input in pseudo-random pieces of 1..max bytes.
type chunkReader struct {
	b   []byte
	rnd *rand.Rand
	max int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(1+c.rnd.IntN(c.max), len(p), len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

func TestRecordings(t *testing.T) {
	wantCounts := map[string]int{
		"main_stream_response.txt":                               15,
		"fetch_current_datetime_and_weather_stream_response.txt": 85,
		"send_email_stream_response.txt":                         71,
	}
	for file, text := range recorded(t) {
		want := expectedFromRecording(t, text)
		if len(want) != wantCounts[file] {
			t.Fatalf("%s: reference parse found %d events, want %d", file, len(want), wantCounts[file])
		}
		if want[len(want)-1] != (rec{"done", "[DONE]"}) {
			t.Fatalf("%s: last event %+v", file, want[len(want)-1])
		}
		crlf := strings.ReplaceAll(text, "\n", "\r\n")
		cr := strings.ReplaceAll(text, "\n", "\r")
		variants := map[string]func() io.Reader{
			"whole":          func() io.Reader { return strings.NewReader(text) },
			"one-byte":       func() io.Reader { return iotest.OneByteReader(strings.NewReader(text)) },
			"crlf":           func() io.Reader { return strings.NewReader(crlf) },
			"crlf/one-byte":  func() io.Reader { return iotest.OneByteReader(strings.NewReader(crlf)) },
			"cr/one-byte":    func() io.Reader { return iotest.OneByteReader(strings.NewReader(cr)) },
			"crlf/chunks":    func() io.Reader { return &chunkReader{[]byte(crlf), rand.New(rand.NewPCG(1, 2)), 97} },
			"lf/data-err":    func() io.Reader { return iotest.DataErrReader(strings.NewReader(text)) },
			"bom/crlf/half":  func() io.Reader { return iotest.HalfReader(strings.NewReader("\uFEFF" + crlf)) },
			"no-final-blank": func() io.Reader { return strings.NewReader(strings.TrimRight(text, "\n")) },
		}
		for name, mk := range variants {
			t.Run(file+"/"+name, func(t *testing.T) {
				got, err := readAll(t, sse.NewReader(mk()))
				if err != io.EOF {
					t.Fatalf("ended with %v, want io.EOF", err)
				}
				if len(got) != len(want) {
					t.Fatalf("got %d events, want %d", len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("event %d:\n got  %q %.80q\n want %q %.80q", i, got[i].name, got[i].data, want[i].name, want[i].data)
					}
				}
			})
		}
	}
}

func TestEdgeCases(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []rec
	}{
		{"empty", "", nil},
		{"lf", "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n", []rec{{"a", "1"}, {"b", "2"}}},
		{"crlf", "event: a\r\ndata: 1\r\n\r\nevent: b\r\ndata: 2\r\n\r\n", []rec{{"a", "1"}, {"b", "2"}}},
		{"cr", "event: a\rdata: 1\r\revent: b\rdata: 2\r\r", []rec{{"a", "1"}, {"b", "2"}}},
		{"mixed endings", "event: a\r\ndata: 1\r\rdata: 2\n\r\n", []rec{{"a", "1"}, {"", "2"}}},
		{"multi-line data", "data: a\ndata: b\ndata:\ndata: c\n\n", []rec{{"", "a\nb\n\nc"}}},
		{"comments", ": keep-alive\n:\nevent: a\n: between\ndata: 1\n\n: trailing\n\n", []rec{{"a", "1"}}},
		{"field without colon", "event: a\ndata\n\n", []rec{{"a", ""}}},
		{"event field without colon", "event\ndata: x\n\n", []rec{{"", "x"}}},
		{"no space after colon", "event:a\ndata:1\n\n", []rec{{"a", "1"}}},
		{"only one space stripped", "event:  a\ndata:  1 \n\n", []rec{{" a", " 1 "}}},
		{"colon in value", "data: {\"a\":\"b: c\"}\n\n", []rec{{"", `{"a":"b: c"}`}}},
		{"id and retry ignored", "id: 7\nretry: 10\nevent: a\nid\ndata: 1\n\n", []rec{{"a", "1"}}},
		{"unknown field ignored", "foo: bar\ndata: 1\n\n", []rec{{"", "1"}}},
		{"missing final blank line", "event: a\ndata: 1\n\nevent: b\ndata: 2", []rec{{"a", "1"}, {"b", "2"}}},
		{"missing final blank line after lf", "event: a\ndata: 1\n", []rec{{"a", "1"}}},
		{"missing final blank line after cr", "event: a\rdata: 1\r", []rec{{"a", "1"}}},
		{"bom", "\uFEFFevent: a\ndata: 1\n\n", []rec{{"a", "1"}}},
		{"bom only at start", "\uFEFFdata: 1\n\n\uFEFFdata: 2\n\ndata: 3\n\n", []rec{{"", "1"}, {"", "3"}}},
		{"truncated bom is data", "\xEF\xBB", nil},
		{"no data no dispatch", "event: a\n\ndata: 1\n\n", []rec{{"", "1"}}},
		{"last event name wins", "event: a\nevent: b\ndata: 1\n\n", []rec{{"b", "1"}}},
		{"blank lines between", "\n\n\r\n\rdata: 1\n\n\n\n", []rec{{"", "1"}}},
		{"multibyte", "data: 25\uFFFDC \u00e9\U0001F600\n\n", []rec{{"", "25\uFFFDC \u00e9\U0001F600"}}},
		{"data: [DONE]", "event: done\ndata: [DONE]\n\n", []rec{{"done", "[DONE]"}}},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one-byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"data-err": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		for rn, mk := range readers {
			t.Run(tt.name+"/"+rn, func(t *testing.T) {
				got, err := readAll(t, sse.NewReader(mk(tt.input)))
				if err != io.EOF {
					t.Fatalf("ended with %v, want io.EOF", err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Fatalf("got %q, want %q", got, tt.want)
					}
				}
			})
		}
	}
}

func TestEOFIsSticky(t *testing.T) {
	r := sse.NewReader(strings.NewReader("data: 1\n\n"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("got %v, want io.EOF", err)
		}
	}
}

func TestReadErrorDropsPartialEvent(t *testing.T) {
	boom := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader("event: a\ndata: 1\n\nevent: b\ndata: {\"par"), iotest.ErrReader(boom))
	got, err := readAll(t, sse.NewReader(src))
	if !errors.Is(err, boom) {
		t.Fatalf("got error %v, want %v", err, boom)
	}
	if len(got) != 1 || got[0] != (rec{"a", "1"}) {
		t.Fatalf("got %q", got)
	}
	if _, err := sse.NewReader(iotest.ErrReader(boom)).Next(); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
}

func TestMaxEventSize(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name  string
		input string
	}{
		{"long line", "data: " + long + "\n\n"},
		{"long joined data", strings.Repeat("data: "+long[:30]+"\n", 5) + "\n"},
		{"long unterminated line", "data: " + long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sse.NewReader(strings.NewReader("data: ok\n\n"+tt.input), sse.MaxEventSize(64))
			if ev, err := r.Next(); err != nil || string(ev.Data) != "ok" {
				t.Fatalf("first event: %q, %v", ev.Data, err)
			}
			if _, err := r.Next(); !errors.Is(err, sse.ErrEventTooLarge) {
				t.Fatalf("got %v, want ErrEventTooLarge", err)
			}
			if _, err := r.Next(); !errors.Is(err, sse.ErrEventTooLarge) {
				t.Fatalf("error not sticky: %v", err)
			}
		})
	}
	// Exactly at the limit is fine, also split one byte at a time.
	exact := strings.Repeat("y", 64-1)
	r := sse.NewReader(iotest.OneByteReader(strings.NewReader("data: "+exact+"\r\n\r\n")), sse.MaxEventSize(64+6))
	if ev, err := r.Next(); err != nil || string(ev.Data) != exact {
		t.Fatalf("got %q, %v", ev.Data, err)
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestNoProgress(t *testing.T) {
	if _, err := sse.NewReader(emptyReader{}).Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("got %v, want io.ErrNoProgress", err)
	}
}

func TestLargeEventGrowsBuffer(t *testing.T) {
	big := strings.Repeat("0123456789", 10_000) // larger than the initial buffer
	input := "event: big\ndata: " + big + "\n\nevent: small\ndata: 1\n\n"
	for name, src := range map[string]io.Reader{
		"whole":  strings.NewReader(input),
		"chunks": &chunkReader{[]byte(input), rand.New(rand.NewPCG(3, 4)), 5000},
	} {
		got, err := readAll(t, sse.NewReader(src))
		if err != io.EOF || len(got) != 2 || got[0] != (rec{"big", big}) || got[1] != (rec{"small", "1"}) {
			t.Fatalf("%s: %d events, err %v", name, len(got), err)
		}
	}
}

// TestManyCROnlyLines guards against rescanning the buffer for '\n' on
// every line of a CR-only stream.
func TestManyCROnlyLines(t *testing.T) {
	var b strings.Builder
	for range 50_000 {
		b.WriteString("data: x\r\r")
	}
	got, err := readAll(t, sse.NewReader(strings.NewReader(b.String())))
	if err != io.EOF || len(got) != 50_000 {
		t.Fatalf("%d events, err %v", len(got), err)
	}
}

// loopReader serves its content over and over, filling each read the way
// a busy connection does.
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

func BenchmarkReader(b *testing.B) {
	text := recorded(b)["send_email_stream_response.txt"]
	var deltas bytes.Buffer
	for _, block := range strings.Split(text, "\n\n") {
		if strings.HasPrefix(block, "event: thread.message.delta\n") {
			deltas.WriteString(block + "\n\n")
		}
	}
	for _, crlf := range []bool{false, true} {
		name, in := "lf", deltas.Bytes()
		if crlf {
			name, in = "crlf", bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
		}
		b.Run("message.delta/"+name, func(b *testing.B) {
			r := sse.NewReader(&loopReader{b: in})
			b.ReportAllocs()
			b.SetBytes(int64(len(in)) / 60)
			for b.Loop() {
				if _, err := r.Next(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
