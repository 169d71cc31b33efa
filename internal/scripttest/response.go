package scripttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Response is how the server answers a call.
type Response struct {
	status      int
	contentType string
	body        []byte
	header      http.Header
	stream      bool
	events      []Event
	crlf        bool
	chunk       int
	gate        *Gate
	dynamic     func(Request) Response
	reset       bool
}

// JSON answers status with v encoded as JSON without HTML escaping (v may
// be a string or []byte of ready JSON).
func JSON(status int, v any) Response {
	var body []byte
	switch v := v.(type) {
	case string:
		body = []byte(v)
	case []byte:
		body = v
	default:
		body = []byte(Encode(v))
	}
	return Response{status: status, contentType: "application/json", body: body}
}

// Raw answers status with a body of any content type.
func Raw(status int, contentType, body string) Response {
	return Response{status: status, contentType: contentType, body: []byte(body)}
}

// Stream answers 200 with an event stream of events, flushed one by one;
// the body ends after the last.
func Stream(events ...Event) Response {
	return Response{status: http.StatusOK, stream: true, events: events}
}

// Reset answers nothing: the request is read, then the connection is
// reset before a byte of the answer, as a gateway or a network may.
func Reset() Response { return Response{reset: true} }

// Respond answers with what f makes of the request, for answers that
// depend on it (an id or URL the client generated).
func Respond(f func(Request) Response) Response { return Response{dynamic: f} }

// WithHeader returns resp with a header set on the answer.
func (resp Response) WithHeader(key, value string) Response {
	h := resp.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(key, value)
	resp.header = h
	return resp
}

// CRLF ends the stream's lines in "\r\n".
func (resp Response) CRLF() Response {
	resp.crlf = true
	return resp
}

// Chunked writes the stream n bytes at a time, each flushed, and yields
// to other goroutines between them so that an in-process client reads
// them apart: lines, events, CRLF pairs and UTF-8 sequences arrive split
// wherever n falls.
func (resp Response) Chunked(n int) Response {
	resp.chunk = n
	return resp
}

// HeldBy returns resp held at g before anything of it is sent: the
// client waits for the status line and headers until the gate opens.
func (resp Response) HeldBy(g *Gate) Response {
	resp.gate = g
	return resp
}

// Event is one event of a streamed answer, or a fault (Cut, Hang, a
// Gate's Hold).
type Event struct {
	Name  string // the event: line; none when empty
	Data  string // one data: line per line
	Delay time.Duration

	fault   fault
	partial *Event
	gate    *Gate
	oneLine bool
}

type fault uint8

const (
	faultNone fault = iota
	faultCut
	faultHang
	faultGate
)

// After returns e sent after a delay.
func (e Event) After(d time.Duration) Event {
	e.Delay = d
	return e
}

// Wire returns the event as it is written on the stream: an event: line
// when it has a name, one data: line per line of data, a blank line.
func (e Event) Wire() string { return e.wire("\n") }

// WireCRLF returns the event as Wire does, with lines ending in "\r\n".
func (e Event) WireCRLF() string { return e.wire("\r\n") }

func (e Event) wire(eol string) string {
	var b strings.Builder
	if e.Name != "" {
		b.WriteString("event: " + e.Name + eol)
	}
	if e.oneLine {
		b.WriteString("data: " + e.Data + eol)
	} else {
		for line := range strings.SplitSeq(e.Data, "\n") {
			b.WriteString("data: " + line + eol)
		}
	}
	b.WriteString(eol)
	return b.String()
}

// OneLine returns an unnamed event whose data is written on one data:
// line as it is, newlines and all, as a server that does not frame its
// data writes it.
func OneLine(data string) Event { return Event{Data: data, oneLine: true} }

// Cut resets the connection halfway through writing ev: the client gets
// part of the event and then a connection reset.
func Cut(ev Event) Event { return Event{fault: faultCut, partial: &ev} }

// Hang stops sending and holds the stream open until the client goes away.
func Hang() Event { return Event{fault: faultHang} }

// Gate holds answers where a test wants them held, and tells it when one
// got there: a stream at the event Hold returns, or a whole answer
// (Response.HeldBy). One gate may hold several answers; once open it
// holds none.
type Gate struct {
	reached, open, left             chan struct{}
	reachedOnce, openOnce, leftOnce sync.Once
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{reached: make(chan struct{}), open: make(chan struct{}), left: make(chan struct{})}
}

// Hold returns an event that sends nothing and holds the stream at g.
func (g *Gate) Hold() Event { return Event{fault: faultGate, gate: g} }

// Reached is closed once an answer got to the gate: the request was
// received (and, for a stream held at an event, the events before it
// written).
func (g *Gate) Reached() <-chan struct{} { return g.reached }

// Left is closed once a client went away while held at the gate.
func (g *Gate) Left() <-chan struct{} { return g.left }

// Open lets the answers held at g go on.
func (g *Gate) Open() { g.openOnce.Do(func() { close(g.open) }) }

// wait holds r at the gate until it opens; it reports false if the client
// went away first, or the server closed.
func (g *Gate) wait(s *Server, r *http.Request) bool {
	g.reachedOnce.Do(func() { close(g.reached) })
	select {
	case <-g.open:
		return true
	case <-r.Context().Done():
		g.leftOnce.Do(func() { close(g.left) })
	case <-s.closing:
	}
	return false
}

func (resp Response) serve(s *Server, w http.ResponseWriter, r *http.Request) {
	if resp.gate != nil && !resp.gate.wait(s, r) {
		return
	}
	if resp.reset {
		s.reset(w)
		return
	}
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	if !resp.stream {
		w.Header().Set("Content-Type", resp.contentType)
		w.WriteHeader(resp.status)
		w.Write(resp.body)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(resp.status)
	if err := rc.Flush(); err != nil {
		return
	}
	for _, ev := range resp.events {
		if ev.Delay > 0 && !s.wait(r, ev.Delay) {
			s.clientLeft(r)
			return
		}
		switch ev.fault {
		case faultHang:
			s.wait(r, -1)
			s.clientLeft(r)
			return
		case faultCut:
			s.cut(rc, r, resp.wire(*ev.partial))
			return
		case faultGate:
			if !ev.gate.wait(s, r) {
				s.clientLeft(r)
				return
			}
			continue
		}
		if !resp.write(w, rc, resp.wire(ev)) {
			s.clientLeft(r)
			return
		}
	}
}

func (resp Response) wire(ev Event) string {
	if resp.crlf {
		return ev.WireCRLF()
	}
	return ev.Wire()
}

// write writes wire, in chunks when asked, and reports whether the client
// is still there.
func (resp Response) write(w io.Writer, rc *http.ResponseController, wire string) bool {
	n := resp.chunk
	if n <= 0 {
		n = len(wire)
	}
	for len(wire) > 0 {
		k := min(n, len(wire))
		if _, err := io.WriteString(w, wire[:k]); err != nil {
			return false
		}
		if rc.Flush() != nil {
			return false
		}
		wire = wire[k:]
		if resp.chunk > 0 {
			runtime.Gosched()
		}
	}
	return true
}

// wait sleeps for d (forever if d < 0) unless the client goes away or the
// server closes; it reports whether the whole time passed.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	var timeout <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return true
	case <-r.Context().Done():
	case <-s.closing:
	}
	return false
}

// cut writes the first half of wire as a chunk announced at full length,
// then resets the connection.
func (s *Server) cut(rc *http.ResponseController, r *http.Request, wire string) {
	conn, bufrw, err := rc.Hijack()
	if err != nil {
		s.Errorf("hijacking the connection to cut it: %v", err)
		return
	}
	defer conn.Close()
	fmt.Fprintf(bufrw, "%x\r\n%s", len(wire), wire[:len(wire)/2])
	if err := bufrw.Flush(); err != nil {
		return
	}
	s.wait(r, 20*time.Millisecond) // the half event arrives before the reset
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // close with RST
	}
}

// reset closes the connection with RST, without an answer.
func (s *Server) reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.Errorf("hijacking the connection to reset it: %v", err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// Encode returns v as one line of JSON, without HTML escaping.
func Encode(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("scripttest: encoding %T: %v", v, err))
	}
	return strings.TrimSuffix(b.String(), "\n") // Encode's newline
}
