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

	"github.com/brainwire/brainwire/sse"
)

// Transport returns an http.RoundTripper that records, through next, the
// exchanges of every capture this Recorder watches. Place it under the
// agent service's client (under the authorization transport, so that what
// is recorded is what goes on the wire). Requests whose context carries no
// recording pass through untouched.
//
// A response body is passed to the reader as it arrives: each Read goes
// to next's body and the bytes it returned are kept, with their time,
// before Read returns them. Nothing is buffered ahead of the reader and no
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
// session's mutex. The read path only appends the bytes and when they
// came; the writer parses the events out of them (build).
type exchange struct {
	s     *session
	start time.Time
	rec   Exchange // Response.Events and bodies are filled in by build
	// stream says the body is an event stream.
	stream bool
	body   []byte
	reads  []timedRead
	done   bool
}

// timedRead marks that body[:end] had arrived ms after the request.
type timedRead struct {
	ms  int64
	end int
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
		e.body = append(e.body, p...)
		e.reads = append(e.reads, timedRead{ms: e.ms(now), end: len(e.body)})
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
	e.rec.Response.EndMs = e.ms(now)
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
		var partial []byte
		rs.Events, partial = parseStream(e.body, e.reads)
		if len(partial) > 0 {
			rs.setPartial(partial)
		}
	} else {
		rs.Body, rs.BodyText = jsonOrText(e.body)
	}
	ex.Response = &rs
	return ex
}

// parseStream splits a recorded event stream into its events, each timed
// by the read that brought the end of its blank line, and returns the
// bytes after the last complete event: the start of an event the stream
// never finished.
func parseStream(body []byte, reads []timedRead) (events []Event, partial []byte) {
	var name, data []byte
	hasData := false
	start, r := 0, 0 // start is where the event not yet complete begins
	for pos := 0; ; {
		i := sse.LineEnd(body[pos:])
		if i < 0 {
			break
		}
		line, next := body[pos:pos+i], pos+i+1
		if body[pos+i] == '\r' && next < len(body) && body[next] == '\n' {
			next++
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch {
		case len(line) == 0:
			if hasData {
				for reads[r].end <= pos+i {
					r++
				}
				events = append(events, NewEvent(reads[r].ms, string(name), data))
			}
			name, data, hasData, start = nil, nil, false, next
		case string(field) == "event":
			name = value
		case string(field) == "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
		}
		pos = next
	}
	if len(bytes.TrimSpace(body[start:])) > 0 {
		partial = body[start:]
	}
	return events, partial
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
