package sse_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/brainwire/brainwire/internal/fuzztest"
	"github.com/brainwire/brainwire/sse"
)

// referenceEvents parses an event stream the plain way the WHATWG
// specification describes, line by line, with the Reader's one documented
// difference: an event whose final blank line is missing is still
// dispatched at the end. It also returns the longest line (without its
// terminator) and the longest joined data, which decide whether a size
// limit is hit.
func referenceEvents(b []byte) (evs []rec, longestLine, longestData int) {
	b = bytes.TrimPrefix(b, []byte("\uFEFF")) // only at the very start
	var name string
	var data []string
	hasData := false
	dispatch := func() {
		if hasData {
			d := strings.Join(data, "\n")
			longestData = max(longestData, len(d))
			evs = append(evs, rec{name, d})
		}
		name, data, hasData = "", nil, false
	}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexAny(b, "\r\n"); i < 0 {
			b = nil
		} else {
			line = b[:i]
			if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			b = b[i+1:]
		}
		longestLine = max(longestLine, len(line))
		switch {
		case len(line) == 0:
			dispatch()
			continue
		case line[0] == ':':
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "data":
			data, hasData = append(data, string(value)), true
		case "event":
			name = string(value)
		}
	}
	dispatch()
	return evs, longestLine, longestData
}

func TestReferenceEvents(t *testing.T) {
	got, line, data := referenceEvents([]byte("\uFEFFevent: a\r\ndata: 1\rdata:2\n\n: c\ndata\nevent:b"))
	want := []rec{{"a", "1\n2"}, {"b", ""}}
	if !slices.Equal(got, want) || line != len("event: a") || data != 3 {
		t.Fatalf("got %q %d %d, want %q", got, line, data, want)
	}
}

// fuzzLimit is the MaxEventSize the fuzz targets also read with, small
// enough for the fuzzer to reach.
const fuzzLimit = 64

// FuzzReader feeds any bytes in any chunking. The events read must be what
// the reference parser makes of the bytes, whether the stream is read
// whole, one byte at a time or in random pieces; under a size limit the
// three readings must agree with one another, end in ErrEventTooLarge
// exactly when a line or an event is over the limit, and yield the events
// before it.
func FuzzReader(f *testing.F) {
	for _, s := range fuzztest.Streams(f, 1024) {
		f.Add(s, uint64(1))
		f.Add(bytes.ReplaceAll(s, []byte("\n"), []byte("\r\n")), uint64(7))
	}
	for _, s := range []string{
		"", "\uFEFF", "\xEF\xBB", "\r", "\r\n", "\n\r", "data", "data:", "data: \r\n\r\n", ":",
		"event: a\r\ndata: 1\r\rdata: 2\n\r\n", "data: a\ndata: b\ndata:\ndata: c\n\n",
		"event\ndata: x\n\n", "id: 7\nretry: 10\nevent: a\nid\ndata: 1\n\n", "\uFEFFdata: 1\n\n\uFEFFdata: 2\n\n",
		"data: " + strings.Repeat("x", fuzzLimit) + "\n\n", strings.Repeat("data: 0123456789\n", 8) + "\n",
	} {
		f.Add([]byte(s), uint64(3))
	}
	f.Fuzz(func(t *testing.T, stream []byte, seed uint64) {
		want, longestLine, longestData := referenceEvents(stream)
		readers := map[string]func() io.Reader{
			"whole":    func() io.Reader { return bytes.NewReader(stream) },
			"one-byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
			"pieces": func() io.Reader {
				return &chunkReader{stream, rand.New(rand.NewPCG(seed, seed>>32)), 1 + int(seed%61)}
			},
		}
		type result struct {
			evs []rec
			err error
		}
		var limited []result
		for name, mk := range readers {
			got, err := readAll(t, sse.NewReader(mk()))
			if err != io.EOF || !slices.Equal(got, want) {
				t.Fatalf("%s: got %q, %v\nwant %q, io.EOF", name, got, err, want)
			}
			got, err = readAll(t, sse.NewReader(mk(), sse.MaxEventSize(fuzzLimit)))
			limited = append(limited, result{got, err})
		}
		r := limited[0]
		for _, o := range limited[1:] {
			if o.err != r.err || !slices.Equal(o.evs, r.evs) {
				t.Fatalf("with a limit, readings differ: %q, %v and %q, %v", r.evs, r.err, o.evs, o.err)
			}
		}
		// A line may be one byte longer than the limit: the buffer holds
		// the limit plus a CRLF, and a line is complete at its first
		// terminator byte.
		over := longestLine > fuzzLimit+1 || longestData > fuzzLimit
		switch {
		case r.err == io.EOF && !over:
			if !slices.Equal(r.evs, want) {
				t.Fatalf("with a limit: got %q, want %q", r.evs, want)
			}
		case errors.Is(r.err, sse.ErrEventTooLarge) && over:
			if len(r.evs) > len(want) || !slices.Equal(r.evs, want[:len(r.evs)]) {
				t.Fatalf("with a limit: got %q, not a prefix of %q", r.evs, want)
			}
		default:
			t.Fatalf("with a limit: ended with %v (longest line %d, longest data %d, limit %d)", r.err, longestLine, longestData, fuzzLimit)
		}
	})
}
