// Package foundrytest is a scripted Foundry Agent Service for tests: an
// httptest.Server speaking the threads/runs REST and SSE protocol that
// answers an ordered script of expected calls, records every request, and
// can break streams the way real networks do (a connection reset in the
// middle of an event, a stream that hangs, a stream that ends without
// done). The builders in this package produce payloads with the same
// fields as recordings of the real service.
package foundrytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/textcut"
)

// ProjectPath is the path of the project endpoint on the server.
const ProjectPath = "/api/projects/foundrytest"

// Server is a scripted upstream. Create it with NewServer; it is closed
// when the test ends, and the test fails if scripted calls never came.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	closing chan struct{}

	mu         sync.Mutex
	script     []Call
	next       int
	requests   []Request
	cancelling map[string]bool // run ids a cancel was received for
}

// Call is one expected request and its answer.
type Call struct {
	Method   string
	Path     string // operation path; a {name} segment matches any segment
	Response Response
}

// Expect returns a Call for pattern, a method and an operation path such as
// "POST /threads/runs" or "POST /threads/{t}/runs/{r}/submit_tool_outputs".
func Expect(pattern string, resp Response) Call {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		panic(fmt.Sprintf("foundrytest: pattern %q: want \"METHOD /path\"", pattern))
	}
	return Call{Method: method, Path: path, Response: resp}
}

func (c Call) String() string { return c.Method + " " + c.Path }

func (c Call) matches(method, path string) bool {
	if method != c.Method {
		return false
	}
	want := strings.Split(c.Path, "/")
	got := strings.Split(path, "/")
	if len(want) != len(got) {
		return false
	}
	for i, w := range want {
		if strings.HasPrefix(w, "{") && strings.HasSuffix(w, "}") {
			if got[i] == "" {
				return false
			}
		} else if w != got[i] {
			return false
		}
	}
	return true
}

// Request is a request the server received.
type Request struct {
	Method  string
	Path    string // operation path, after ProjectPath
	Query   url.Values
	Header  http.Header
	Body    map[string]any // the decoded JSON body; nil without one
	RawBody []byte
}

func (r Request) String() string { return r.Method + " " + r.Path }

// NewServer starts a server that expects the calls of script in order.
// Cancel (POST .../runs/{r}/cancel) and get-run (GET .../runs/{r}) calls
// are answered whenever they come and are not next in the script: cancel
// with the run in status cancelling, get with in_progress (or cancelling
// once cancelled).
func NewServer(t testing.TB, script ...Call) *Server {
	t.Helper()
	s := &Server{t: t, closing: make(chan struct{}), script: script, cancelling: make(map[string]bool)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.close)
	return s
}

// Endpoint is the project endpoint to give the client under test.
func (s *Server) Endpoint() string { return s.srv.URL + ProjectPath }

// URL is the server's base URL.
func (s *Server) URL() string { return s.srv.URL }

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Script appends calls to the expected ones.
func (s *Server) Script(calls ...Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, calls...)
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Find returns the received requests matching pattern ("POST /threads/runs",
// with {name} wildcards).
func (s *Server) Find(pattern string) []Request {
	c := Expect(pattern, Response{})
	var out []Request
	for _, r := range s.Requests() {
		if c.matches(r.Method, r.Path) {
			out = append(out, r)
		}
	}
	return out
}

// Cancels returns the cancel requests received so far.
func (s *Server) Cancels() []Request {
	return s.Find("POST /threads/{t}/runs/{r}/cancel")
}

// Pending returns the scripted calls that have not come yet.
func (s *Server) Pending() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.script[s.next:]...)
}

func (s *Server) close() {
	close(s.closing)
	s.srv.Close()
	if p := s.Pending(); len(p) > 0 {
		s.t.Errorf("foundrytest: %d scripted call(s) never came, first: %s", len(p), p[0])
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("foundrytest: reading body of %s %s: %v", r.Method, r.URL.Path, err)
		return
	}
	req := Request{
		Method:  r.Method,
		Path:    strings.TrimPrefix(r.URL.Path, ProjectPath),
		Query:   r.URL.Query(),
		Header:  r.Header.Clone(),
		RawBody: raw,
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			s.t.Errorf("foundrytest: %s: body is not a JSON object: %v\n%s", req, err, raw)
		}
	}

	s.mu.Lock()
	s.requests = append(s.requests, req)
	var call *Call
	if s.next < len(s.script) && s.script[s.next].matches(req.Method, req.Path) && strings.HasPrefix(r.URL.Path, ProjectPath+"/") {
		call = &s.script[s.next]
		s.next++
	}
	var next string
	if s.next < len(s.script) {
		next = s.script[s.next].String()
	}
	s.mu.Unlock()

	if call != nil {
		call.Response.serve(s, w, r)
		return
	}
	if s.auto(w, req) {
		return
	}
	if next == "" {
		next = "nothing (the script is done)"
	}
	s.t.Errorf("foundrytest: unexpected call %s (path %s)\n  expected next: %s\n  body: %s", req, r.URL.Path, next, textcut.Ellipsis(string(raw), 300))
	JSON(http.StatusInternalServerError, errorBody("unexpected_call", "foundrytest: unexpected call "+req.String())).serve(s, w, r)
}

// auto answers cancel and get-run calls outside the script.
func (s *Server) auto(w http.ResponseWriter, req Request) bool {
	parts := strings.Split(strings.TrimPrefix(req.Path, "/"), "/")
	switch {
	case req.Method == http.MethodPost && len(parts) == 5 && parts[0] == "threads" && parts[2] == "runs" && parts[4] == "cancel":
		s.mu.Lock()
		s.cancelling[parts[3]] = true
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, NewRun(parts[1], parts[3]).Object("cancelling"))
		return true
	case req.Method == http.MethodGet && len(parts) == 4 && parts[0] == "threads" && parts[2] == "runs":
		s.mu.Lock()
		status := "in_progress"
		if s.cancelling[parts[3]] {
			status = "cancelling"
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, NewRun(parts[1], parts[3]).Object(status))
		return true
	}
	return false
}

// Response is how the server answers a call.
type Response struct {
	status      int
	contentType string
	body        []byte
	stream      bool
	events      []Event
	gate        *Gate
}

// HeldBy returns resp held at g before anything of it is sent: the
// client waits for the status line and headers until the gate opens.
func (resp Response) HeldBy(g *Gate) Response {
	resp.gate = g
	return resp
}

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

// JSON answers status with v encoded as JSON (v may be a string or []byte
// of ready JSON).
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

// Error answers status with the service's error body
// {"error":{"message","type","param","code"}}.
func Error(status int, code, message string) Response {
	return JSON(status, errorBody(code, message))
}

// Raw answers status with a body of any content type.
func Raw(status int, contentType, body string) Response {
	return Response{status: status, contentType: contentType, body: []byte(body)}
}

// Stream answers 200 with an event stream of events, flushed one by one.
// The stream ends after the last event; add Done() to end it properly.
func Stream(events ...Event) Response {
	return Response{status: http.StatusOK, stream: true, events: events}
}

// Event is one event of a streamed answer, or a fault (Cut, Hang).
type Event struct {
	Name  string
	Data  string
	Delay time.Duration // how long to wait before sending it

	fault   fault
	partial *Event
	gate    *Gate
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

// Wire returns the event as it is written on the stream.
func (e Event) Wire() string {
	var b strings.Builder
	b.WriteString("event: " + e.Name + "\n")
	for line := range strings.SplitSeq(e.Data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// Cut resets the connection halfway through writing ev: the client gets
// part of the event and then a connection reset.
func Cut(ev Event) Event {
	return Event{fault: faultCut, partial: &ev}
}

// Hang stops sending and holds the stream open until the client goes away.
func Hang() Event {
	return Event{fault: faultHang}
}

func (resp Response) serve(s *Server, w http.ResponseWriter, r *http.Request) {
	if resp.gate != nil && !resp.gate.wait(s, r) {
		return
	}
	if !resp.stream {
		w.Header().Set("Content-Type", resp.contentType)
		w.WriteHeader(resp.status)
		w.Write(resp.body)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(resp.status)
	if err := rc.Flush(); err != nil {
		return
	}
	for _, ev := range resp.events {
		if ev.Delay > 0 && !s.wait(r, ev.Delay) {
			return
		}
		switch ev.fault {
		case faultHang:
			s.wait(r, -1)
			return
		case faultCut:
			s.cut(rc, r, ev.partial.Wire())
			return
		case faultGate:
			if !ev.gate.wait(s, r) {
				return
			}
			continue
		}
		if _, err := io.WriteString(w, ev.Wire()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
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
		s.t.Errorf("foundrytest: hijacking the connection to cut it: %v", err)
		return
	}
	defer conn.Close()
	half := wire[:len(wire)/2]
	fmt.Fprintf(bufrw, "%x\r\n%s", len(wire), half)
	if err := bufrw.Flush(); err != nil {
		return
	}
	// Give the half event time to arrive before the reset.
	s.wait(r, 20*time.Millisecond)
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // close with RST
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, Encode(v))
}

func errorBody(code, message string) Object {
	return Object{
		{"error", Object{
			{"message", message},
			{"type", "invalid_request_error"},
			{"param", nil},
			{"code", code},
		}},
	}
}

// Object is a JSON object that keeps its fields in order, so payloads read
// like the service's.
type Object []Field

// Field is one member of an Object.
type Field struct {
	Key   string
	Value any
}

// MarshalJSON implements json.Marshaler.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := encodeTo(&b, f.Key); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := encodeTo(&b, f.Value); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Encode returns v as one line of JSON, without HTML escaping.
func Encode(v any) string {
	var b bytes.Buffer
	if err := encodeTo(&b, v); err != nil {
		panic(fmt.Sprintf("foundrytest: encoding %T: %v", v, err))
	}
	return b.String()
}

func encodeTo(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}
