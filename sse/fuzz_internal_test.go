package sse

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// endless serves prefix, then tail over and over until it has served
// limit bytes (Next reads on through blank lines and comments, so a stream
// of only those must end somewhere for the test to), counting what it
// served.
type endless struct {
	prefix, tail []byte
	off          int
	served       int
	limit        int
}

func (e *endless) Read(p []byte) (int, error) {
	if len(e.prefix) > 0 {
		n := copy(p, e.prefix)
		e.prefix = e.prefix[n:]
		e.served += n
		return n, nil
	}
	if len(e.tail) == 0 || e.served >= e.limit {
		return 0, io.EOF
	}
	p = p[:min(len(p), e.limit-e.served)]
	n := 0
	for n < len(p) {
		m := copy(p[n:], e.tail[e.off:])
		e.off = (e.off + m) % len(e.tail)
		n += m
	}
	e.served += n
	return n, nil
}

// FuzzReaderEndless reads a stream that never ends: any prefix, then any
// tail repeated forever. Memory must stay bounded by the size limit
// whatever comes, and a tail that never ends its line must end the read
// with ErrEventTooLarge before the reader has taken more than the limit
// past the prefix.
func FuzzReaderEndless(f *testing.F) {
	f.Add([]byte("event: thread.message.delta\ndata: {\"a\":1}\n\n"), []byte("x"))
	f.Add([]byte("data: "), []byte("x"))
	f.Add([]byte(": comment "), []byte("\xF0\x9F\xA7\xA0"))
	f.Add([]byte("event: a\n"), []byte("data: x\n"))
	f.Add([]byte(""), []byte("data: x\r\n"))
	f.Add([]byte("data: 1\r"), []byte("event: "))
	f.Add([]byte(""), []byte("data: x\n\n"))
	f.Add([]byte("event: a\r\n"), []byte("\r\n"))
	f.Add([]byte("data: x\n\n"), []byte(""))
	const limit = 256
	// What append may round a slice of at most limit+2 bytes up to.
	const capBound = 2 * (limit + 2)
	f.Fuzz(func(t *testing.T, prefix, tail []byte) {
		src := &endless{prefix: prefix, tail: tail, limit: len(prefix) + 64*(limit+2)}
		r := NewReader(src, MaxEventSize(limit))
		var err error
		for err == nil {
			_, err = r.Next()
			// Buffers only grow: checking after each event bounds them
			// throughout.
			if cap(r.buf) > limit+2 || cap(r.data) > capBound || cap(r.name) > capBound {
				t.Fatalf("buffers grew past the limit %d: buf %d, data %d, name %d", limit, cap(r.buf), cap(r.data), cap(r.name))
			}
		}
		if len(tail) == 0 || containsLineEnd(tail) {
			return
		}
		if !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("a line that never ends: read %d bytes, ended with %v", src.served, err)
		}
		if src.served > len(prefix)+limit+2 {
			t.Fatalf("a line that never ends: read %d bytes past a prefix of %d, limit %d", src.served-len(prefix), len(prefix), limit)
		}
	})
}

func containsLineEnd(b []byte) bool {
	for _, c := range b {
		if c == '\n' || c == '\r' {
			return true
		}
	}
	return false
}

// A stream that has read a long line waits for its next event with its own
// small buffer again.
func TestReaderGoesBackToItsIdleBuffer(t *testing.T) {
	long := "data: " + string(bytes.Repeat([]byte("x"), 3000)) + "\n\n"
	longer := "data: " + string(bytes.Repeat([]byte("y"), 10_000)) + "\n\n"
	for name, in := range map[string]string{"long": long, "longer": longer} {
		src := &gate{b: []byte(in + "data: 1\n\n")}
		r := NewReader(src)
		for _, want := range []int{len(in) - 8, 1} {
			ev, err := r.Next()
			if err != nil || len(ev.Data) != want {
				t.Fatalf("%s: event of %d bytes, %v; want %d", name, len(ev.Data), err, want)
			}
		}
		// The next Next waits in a read: what does it hold meanwhile?
		src.wait = func() {
			if &r.buf[0] != &r.idle[0] || len(r.buf) != idleBufSize || cap(r.data) > keepDataSize {
				t.Errorf("%s: waits with a buffer of %d bytes and %d of data, want its own %d", name, len(r.buf), cap(r.data), idleBufSize)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("%s: at the end: %v", name, err)
		}
	}
}

// gate serves b, then calls wait (if set) before each read that finds
// nothing left, and ends the stream.
type gate struct {
	b    []byte
	wait func()
}

func (g *gate) Read(p []byte) (int, error) {
	if len(g.b) == 0 {
		if g.wait != nil {
			g.wait()
		}
		return 0, io.EOF
	}
	n := copy(p, g.b)
	g.b = g.b[n:]
	return n, nil
}
