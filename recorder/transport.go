package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Transport returns an http.RoundTripper that records, through next, the
// exchanges of every capture this Recorder watches. Place it under the
// agent service's client (under the authorization transport, so that what
// is recorded is what goes on the wire). Requests whose context carries no
// recording pass through untouched.
//
// A response body is passed to the reader as it arrives: each Read goes
// to next's body and the bytes it returned are parsed for events before
// Read returns them. Nothing is buffered ahead of the reader and no
// goroutine is added.
func (r *Recorder) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{r: r, next: next}
}

type transport struct {
	r    *Recorder
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := sessionFrom(req.Context())
	if s == nil || s.r != t.r {
		return t.next.RoundTrip(req)
	}
	ex := s.begin(req)
	if ex == nil {
		return t.next.RoundTrip(req)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		ex.fail(err)
		return nil, err
	}
	ex.respond(resp)
	resp.Body = &teeBody{rc: resp.Body, ex: ex}
	return resp, nil
}

// requestBody returns a copy of the request body without consuming it, or
// nil when the request cannot give one (no GetBody) or it is over max.
func requestBody(req *http.Request, max int64) []byte {
	if req.Body == nil || req.Body == http.NoBody || req.GetBody == nil {
		return nil
	}
	if req.ContentLength > max {
		return nil
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil || int64(len(b)) > max {
		return nil
	}
	return b
}

// teeBody passes a response body through to its reader and records what
// the reader got.
type teeBody struct {
	rc io.ReadCloser
	ex *exchange
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.ex.read(p[:n], err)
	return n, err
}

func (b *teeBody) Close() error {
	b.ex.close()
	return b.rc.Close()
}

// exchange is one request being recorded. Its state is guarded by the
// session's mutex.
//
// The read path only appends: event names and data go back to back into
// fixed-size blocks (never copied again as they fill), and turning them
// into the fixture's representation is left to the writer.
type exchange struct {
	s      *session
	start  time.Time
	rec    Exchange // Response.Events and bodies are filled in by build
	stream bool
	parser streamParser
	blocks [][]byte
	events []rawEvent
	body   []byte // a body that is not a stream
	done   bool
}

// blockSize is the size of the blocks events are kept in.
const blockSize = 32 << 10

// rawEvent is an event as received: its name is blocks[block][from:mid],
// its data blocks[block][mid:to].
type rawEvent struct {
	ms                   int64
	block, from, mid, to int
}

// keep stores an event's name and data in the current block, starting a
// new one when they do not fit.
func (e *exchange) keep(ms int64, name, data []byte) {
	n := len(name) + len(data)
	last := len(e.blocks) - 1
	if last < 0 || cap(e.blocks[last])-len(e.blocks[last]) < n {
		e.blocks = append(e.blocks, make([]byte, 0, max(blockSize, n)))
		last++
	}
	b := e.blocks[last]
	from := len(b)
	b = append(b, name...)
	mid := len(b)
	b = append(b, data...)
	e.blocks[last] = b
	e.events = append(e.events, rawEvent{ms: ms, block: last, from: from, mid: mid, to: len(b)})
}

func (e *exchange) ms(now time.Time) int64 { return now.Sub(e.start).Milliseconds() }

func (e *exchange) fail(err error) {
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.recording() || e.done {
		return
	}
	e.rec.Error = err.Error()
	e.done = true
}

func (e *exchange) respond(resp *http.Response) {
	now := time.Now()
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.recording() {
		return
	}
	rs := &Response{Ms: e.ms(now), Status: resp.StatusCode, Header: flatten(resp.Header)}
	s.charge(headerSize(resp.Header))
	e.rec.Response = rs
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	e.stream = mt == "text/event-stream"
}

// read records what one Read of the body returned.
func (e *exchange) read(p []byte, err error) {
	if len(p) == 0 && err == nil {
		return
	}
	now := time.Now()
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.recording() || e.done || e.rec.Response == nil {
		return
	}
	if len(p) > 0 {
		if !s.charge(len(p)) {
			return
		}
		if e.stream {
			ms := e.ms(now)
			e.parser.feed(p, func(name, data []byte) { e.keep(ms, name, data) })
		} else {
			e.body = append(e.body, p...)
		}
	}
	if err != nil {
		if !errors.Is(err, io.EOF) {
			e.rec.Response.Error = err.Error()
		}
		e.end(now)
	}
}

// close records a body closed by its reader, at its end or before.
func (e *exchange) close() {
	now := time.Now()
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.recording() || e.done || e.rec.Response == nil {
		return
	}
	// A JSON body read to its last value is whole even if its reader did
	// not wait for EOF.
	if e.stream || !jsonComplete(e.body) {
		e.rec.Response.Closed = true
	}
	e.end(now)
}

// end finishes the response; the caller holds the session's mutex.
func (e *exchange) end(now time.Time) {
	rs := e.rec.Response
	rs.EndMs = e.ms(now)
	if e.stream {
		if p := e.parser.pending(); len(p) > 0 {
			rs.setPartial(bytes.Clone(p))
		}
		e.parser = streamParser{}
	}
	e.done = true
}

// build returns the recorded exchange in the fixture's representation;
// the session is over, so nothing changes it any more.
func (e *exchange) build() Exchange {
	ex := e.rec
	if ex.Response == nil {
		return ex
	}
	rs := *ex.Response
	if e.stream {
		rs.Events = make([]Event, len(e.events))
		for i, ev := range e.events {
			b := e.blocks[ev.block]
			rs.Events[i] = NewEvent(ev.ms, string(b[ev.from:ev.mid]), b[ev.mid:ev.to])
		}
	} else {
		rs.Body, rs.BodyText = jsonOrText(e.body)
	}
	ex.Response = &rs
	return ex
}

func jsonComplete(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && bytes.IndexByte([]byte("{[\""), b[0]) >= 0 && json.Valid(b)
}

// flatten turns a header into one value per name, joined as HTTP allows.
func flatten(h http.Header) map[string]string {
	if len(h) == 0 {
		return nil
	}
	m := make(map[string]string, len(h))
	for k, v := range h {
		m[k] = strings.Join(v, ", ")
	}
	return m
}

func headerSize(h http.Header) int {
	n := 0
	for k, v := range h {
		n += len(k)
		for _, x := range v {
			n += len(x)
		}
	}
	return n
}
