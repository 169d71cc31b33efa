// Package sse reads Server-Sent Events streams (the WHATWG event-stream
// format) from an upstream HTTP response body.
//
// The Reader is built for long streams of small events: after warm-up it
// reads events without allocating, and it is indifferent to how the bytes
// are split across reads (inside a line, a multibyte UTF-8 sequence or a
// CRLF pair).
package sse

import (
	"bytes"
	"errors"
	"io"
	"sync"
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
// agent's instructions and tools runs to several KiB) grows the buffer,
// first to a size that streams share through linePool, and the stream goes
// back to its own buffer once the line is read.
const (
	idleBufSize   = 512 // a delta event fits whole
	lineBufSize   = 4 << 10
	maxEmptyReads = 100
)

// linePool holds the buffers of lineBufSize that streams grow into.
var linePool = sync.Pool{New: func() any { return new([lineBufSize]byte) }}

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

	buf        []byte
	start, end int   // unread bytes are buf[start:end]
	lfPos      int   // index in buf of the next '\n' at or after start, or -1
	lfScanned  int   // buf[start:lfScanned] is known to hold no '\n'
	crPos      int   // the same for '\r', so that LF-only streams
	crScanned  int   // are scanned for '\r' once, not once per line
	err        error // sticky error from src (io.EOF included) or from fill
	fatal      error // sticky error found while parsing a field
	skipLF     bool  // the last line ended in '\r': a leading '\n' belongs to it
	bomChecked bool

	// buf is idle, the pooled buffer, or one of its own.
	idle   [idleBufSize]byte
	pooled *[lineBufSize]byte // from linePool while buf is it

	// The pending event. name and data alias buf while it holds them (the
	// common case, no copy) and are moved to nameBuf/dataBuf before buf
	// changes, or when data lines are joined.
	name, data       []byte
	nameBuf, dataBuf []byte
	nameInBuf        bool
	dataInBuf        bool
	hasData          bool
}

// NewReader returns a Reader that reads the event stream from r.
func NewReader(r io.Reader, opts ...Option) *Reader {
	rd := &Reader{src: r, max: DefaultMaxEventSize, lfPos: -1, crPos: -1}
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
	if r.fatal != nil {
		return Event{}, r.fatal
	}
	// The last event, which may have needed a long copy, is no longer
	// the caller's: keep no more than a small copy buffer.
	if cap(r.dataBuf) > lineBufSize {
		r.dataBuf = nil
	}
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && r.hasData {
				return r.dispatch(), nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if r.hasData {
				return r.dispatch(), nil
			}
			r.name, r.nameInBuf = nil, false
			continue
		}
		if err := r.field(line); err != nil {
			r.fatal = err
			return Event{}, err
		}
	}
}

// dispatch returns the pending event and starts a new one. The returned
// slices stay intact until the next read or field.
func (r *Reader) dispatch() Event {
	ev := Event{Name: r.name, Data: r.data}
	r.name, r.data = nil, nil
	r.nameInBuf, r.dataInBuf, r.hasData = false, false, false
	return ev
}

// own copies the pending event out of buf before buf changes.
func (r *Reader) own() {
	if r.nameInBuf {
		r.nameBuf = append(r.nameBuf[:0], r.name...)
		r.name, r.nameInBuf = r.nameBuf, false
	}
	if r.dataInBuf {
		r.dataBuf = append(r.dataBuf[:0], r.data...)
		r.data, r.dataInBuf = r.dataBuf, false
	}
}

func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment
	}
	name, value := line, line[len(line):]
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		size := len(r.data) + len(value)
		if r.hasData {
			size++
		}
		if size > r.max {
			return ErrEventTooLarge
		}
		if !r.hasData {
			r.data, r.dataInBuf, r.hasData = value, true, true
			return nil
		}
		if r.dataInBuf {
			r.dataBuf = append(r.dataBuf[:0], r.data...)
			r.dataInBuf = false
		}
		r.dataBuf = append(append(r.dataBuf, '\n'), value...)
		r.data = r.dataBuf
	case "event":
		r.name, r.nameInBuf = value, true
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
		if !r.skipLF && r.start < r.end {
			lf, cr := r.lfPos, r.crPos
			if lf < r.start {
				r.lfPos, r.lfScanned = scan(r.buf, r.start, r.end, r.lfScanned, '\n')
				lf = r.lfPos
			}
			if cr < r.start {
				cr = -1
				if r.crScanned < r.end {
					r.crPos, r.crScanned = scan(r.buf, r.start, r.end, r.crScanned, '\r')
					cr = r.crPos
				}
			}
			switch {
			case cr >= 0 && (lf < 0 || cr < lf):
				line := r.buf[r.start:cr]
				switch {
				case cr+1 == r.end: // a '\n' may follow in the next read
					r.start = cr + 1
					r.skipLF = true
				case r.buf[cr+1] == '\n':
					r.start = cr + 2
				default:
					r.start = cr + 1
				}
				return line, nil
			case lf >= 0:
				line := r.buf[r.start:lf]
				r.start = lf + 1
				return line, nil
			}
		}
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

// scan returns the index in buf[start:end] of the first c, or -1, and how
// far buf is known to hold no c; scanned is that extent from before.
func scan(buf []byte, start, end, scanned int, c byte) (pos, newScanned int) {
	from := max(start, scanned)
	if i := bytes.IndexByte(buf[from:end], c); i >= 0 {
		return from + i, scanned
	}
	return -1, end
}

// shift adjusts a remembered position when buf moves left by off.
func shift(pos, scanned, off int) (int, int) {
	if pos >= off {
		pos -= off
	} else {
		pos = -1
	}
	return pos, max(scanned-off, 0)
}

// fill moves the unread bytes to the front of buf, grows it if it is full
// or goes back to the idle buffer if it need not be, and reads once from
// src.
func (r *Reader) fill() {
	r.own()
	if r.start > 0 {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.lfPos, r.lfScanned = shift(r.lfPos, r.lfScanned, r.start)
		r.crPos, r.crScanned = shift(r.crPos, r.crScanned, r.start)
		r.start, r.end = 0, n
	}
	if idle := r.idleBuf(); len(r.buf) > len(idle) && r.end <= len(idle)/2 {
		// The long line that grew buf has been read.
		r.setBuf(idle, nil)
	}
	if r.end == len(r.buf) {
		if len(r.buf) >= r.max+2 { // room for a maximal line and its CRLF
			r.err = ErrEventTooLarge
			return
		}
		size := min(max(2*len(r.buf), lineBufSize), r.max+2)
		if size == lineBufSize {
			p := linePool.Get().(*[lineBufSize]byte)
			r.setBuf(p[:], p)
		} else {
			r.setBuf(make([]byte, size), nil)
		}
	}
	for range maxEmptyReads {
		n, err := r.src.Read(r.buf[r.end:])
		r.end += n
		if err != nil {
			r.err = err
			return
		}
		if n > 0 {
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

// setBuf moves the unread bytes, which start at 0, to nb, and gives a
// pooled buffer back.
func (r *Reader) setBuf(nb []byte, pooled *[lineBufSize]byte) {
	copy(nb, r.buf[:r.end])
	if r.pooled != nil {
		linePool.Put(r.pooled)
	}
	r.buf, r.pooled = nb, pooled
}
