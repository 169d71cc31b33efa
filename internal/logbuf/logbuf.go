// Package logbuf batches a server's log lines into few writes.
//
// A capture logs a line per reasoning chunk; written one by one, each is a
// system call, and under thousands of concurrent captures those calls are
// a tenth of the server's CPU. Batched, a line reaches the log at most
// Delay late.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// Defaults of New.
const (
	Delay = 100 * time.Millisecond
	Size  = 64 << 10
)

// Writer buffers what is written to it and writes it out when size bytes
// are waiting, delay after the first of them, or at Close. Safe for
// concurrent use; each Write is kept whole.
type Writer struct {
	out   io.Writer
	delay time.Duration
	size  int

	mu     sync.Mutex
	buf    []byte
	armed  bool // a flush is due
	closed bool
}

// New returns a Writer to out; zero delay and size take Delay and Size.
func New(out io.Writer, delay time.Duration, size int) *Writer {
	if delay <= 0 {
		delay = Delay
	}
	if size <= 0 {
		size = Size
	}
	return &Writer{out: out, delay: delay, size: size}
}

// Write buffers p. After Close it writes p through.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.out.Write(p)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= w.size {
		w.flushLocked()
	} else if !w.armed {
		w.armed = true
		time.AfterFunc(w.delay, w.flushDue)
	}
	return len(p), nil
}

func (w *Writer) flushDue() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	w.flushLocked()
}

// flushLocked writes the buffer out. A failed write loses those lines:
// there is nowhere else to say so.
func (w *Writer) flushLocked() {
	if len(w.buf) == 0 {
		return
	}
	_, _ = w.out.Write(w.buf)
	if cap(w.buf) > 4*w.size {
		w.buf = nil // a burst grew it: let it go
	} else {
		w.buf = w.buf[:0]
	}
}

// Close writes out what is buffered; later writes go straight through.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	w.closed = true
	return nil
}
