// Package sse reads Server-Sent Events streams (the WHATWG event-stream
// format) from an upstream HTTP response body.
//
// The Reader is built for many long streams of small events: while it
// waits for the next event a stream holds a buffer of 512 bytes, and it
// is indifferent to how the bytes are split across reads (inside a line,
// a multibyte UTF-8 sequence or a CRLF pair).
package sse

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxEventSize bounds a single line and an event's joined data unless
// MaxEventSize says otherwise.
const DefaultMaxEventSize = 16 << 20

// ErrEventTooLarge is returned when a line or an event's data exceeds the
// maximum event size.
var ErrEventTooLarge = errors.New("sse: event too large")

// A stream waits for its next event with a small buffer of its own: most of
// a stream's life is spent waiting for the next small delta, and thousands
// of streams wait at once. A longer line (a run or response object with the
// agent's instructions and tools runs to several KiB) grows the buffer, and
// the stream goes back to its own once the line is read; so do the event's
// data and name.
const (
	idleBufSize   = 512 // a delta event fits whole
	keepDataSize  = 1 << 10
	growBufSize   = 4 << 10
	maxEmptyReads = 100
)

var bom = []byte{0xEF, 0xBB, 0xBF}

// Event is one dispatched event.
//
// Name and Data alias the Reader's internal buffers: they are valid only
// until the next call to Next. Copy them to keep them.
type Event struct {
	// Name is the value of the event's last "event" field, or empty when it
	// had none (which the SSE specification calls type "message").
	Name []byte
	// Data is the event's "data" field values joined with "\n".
	Data []byte
}

// Option configures a Reader.
type Option func(*Reader)

// MaxEventSize sets the largest line and the largest joined data an event
// may have; beyond it Next fails with ErrEventTooLarge. n <= 0 keeps the
// default.
func MaxEventSize(n int) Option {
	return func(r *Reader) {
		if n > 0 {
			r.max = n
		}
	}
}

// Reader reads events from an event stream. It is not safe for concurrent
// use.
type Reader struct {
	src io.Reader
	max int

	idle       [idleBufSize]byte
	buf        []byte // idle, or a larger one while a long line is read
	start, end int    // unread bytes are buf[start:end]
	scanned    int    // buf[start:scanned] holds no line end
	skipLF     bool   // the last line ended in '\r': a leading '\n' belongs to it
	bomChecked bool
	err        error // sticky: from src (io.EOF included), or a parse error

	// The pending event, copied out of buf.
	name, data []byte
	hasData    bool
}

// NewReader returns a Reader that reads the event stream from r.
func NewReader(r io.Reader, opts ...Option) *Reader {
	rd := &Reader{src: r, max: DefaultMaxEventSize}
	for _, o := range opts {
		o(rd)
	}
	rd.buf = rd.idleBuf()
	return rd
}

// Next returns the next event. At the clean end of the stream it returns
// io.EOF; an event whose final blank line is missing is still dispatched at
// the end. Any other error from the underlying reader is returned as is,
// and the pending partial event is dropped. Errors are sticky.
//
// Comment lines, "id" and "retry" fields and unknown fields are skipped;
// blocks without a "data" field dispatch nothing.
func (r *Reader) Next() (Event, error) {
	// The last event is no longer the caller's: keep no large buffers.
	if cap(r.data) > keepDataSize {
		r.data = nil
	}
	if cap(r.name) > keepDataSize {
		r.name = nil
	}
	r.name, r.data, r.hasData = r.name[:0], r.data[:0], false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && r.hasData {
				return Event{Name: r.name, Data: r.data}, nil
			}
			return Event{}, err
		}
		switch {
		case len(line) == 0 && r.hasData:
			return Event{Name: r.name, Data: r.data}, nil
		case len(line) == 0:
			r.name = r.name[:0]
		default:
			if err := r.field(line); err != nil {
				r.err = err
				return Event{}, err
			}
		}
	}
}

func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "data":
		if r.hasData {
			if len(r.data)+1+len(value) > r.max {
				return ErrEventTooLarge
			}
			r.data = append(r.data, '\n')
		} else if len(value) > r.max {
			return ErrEventTooLarge
		}
		r.data, r.hasData = append(r.data, value...), true
	case "event":
		r.name = append(r.name[:0], value...)
	}
	return nil
}

// readLine returns the next line without its terminator ("\r\n", "\n" or
// "\r"). The line aliases buf and is valid until the next read. At the end
// of the stream an unterminated last line is returned before io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	for {
		if !r.bomChecked {
			if r.end-r.start < len(bom) && r.err == nil {
				r.fill()
				continue
			}
			if bytes.HasPrefix(r.buf[r.start:r.end], bom) {
				r.start += len(bom)
			}
			r.bomChecked = true
		}
		if r.skipLF && r.start < r.end {
			if r.buf[r.start] == '\n' {
				r.start++
			}
			r.skipLF = false
		}
		if i := LineEnd(r.buf[max(r.start, r.scanned):r.end]); i >= 0 {
			i += max(r.start, r.scanned)
			line := r.buf[r.start:i]
			r.start = i + 1
			if r.buf[i] == '\r' {
				// A '\n' may follow, in this read or the next.
				r.skipLF = true
			}
			r.scanned = r.start
			return line, nil
		}
		r.scanned = r.end
		if r.err != nil {
			if r.err == io.EOF && r.start < r.end {
				line := r.buf[r.start:r.end]
				r.start = r.end
				return line, nil
			}
			return nil, r.err
		}
		r.fill()
	}
}

// fill moves the unread bytes to the front of buf, grows it if it is full
// or goes back to the idle buffer if it need not be larger, and reads
// once from src.
func (r *Reader) fill() {
	n := r.end - r.start
	nb := r.buf
	switch idle := r.idleBuf(); {
	case n == len(r.buf) && len(r.buf) >= r.max+2: // room for a maximal line and its CRLF
		r.err = ErrEventTooLarge
		return
	case n == len(r.buf):
		nb = make([]byte, min(max(2*len(r.buf), growBufSize), r.max+2))
	case len(r.buf) > len(idle) && n <= len(idle)/2:
		nb = idle // the long line that grew buf has been read
	}
	copy(nb, r.buf[r.start:r.end])
	r.scanned = max(r.scanned-r.start, 0)
	r.buf, r.start, r.end = nb, 0, n
	for range maxEmptyReads {
		m, err := r.src.Read(r.buf[r.end:])
		r.end += m
		if err != nil {
			r.err = err
			return
		}
		if m > 0 {
			return
		}
	}
	r.err = io.ErrNoProgress
}

// idleBuf is the stream's own buffer, no longer than a maximal line needs.
func (r *Reader) idleBuf() []byte {
	n := min(idleBufSize, r.max+2)
	return r.idle[:n:n]
}

// LineEnd is the index of the first '\r' or '\n' in b, or -1: where an
// SSE line ends (the recorder's parser, which times each event, uses it
// too). Two
// IndexByte calls, each vectorized, are several times faster than
// IndexAny's byte-at-a-time loop over a run or response object's line of a
// few KiB: reading the two Responses streams of a capture took 33 µs
// instead of 75.
func LineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}
