// Package adktest is a scripted ADK API server for tests: an
// httptest.Server speaking the REST routes and the /run_sse event stream
// of `adk api_server` that answers an ordered script of expected calls,
// records every request, and can deliver streams the way networks do (in
// odd pieces, with CRLF line ends) or break them (a connection reset in
// the middle of an event, a stream that hangs). The builders in events.go
// produce events shaped like the server's.
package adktest

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
)

// Server is a scripted upstream. Create it with NewServer; it is closed
// when the test ends, and the test fails if scripted calls never came.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	closing chan struct{}
	gone    chan string

	mu       sync.Mutex
	script   []Call
	next     int
	requests []Request
}

// Call is one expected request and its answer.
type Call struct {
	Method   string
	Path     string // a {name} segment matches any segment
	Response Response
}

// Expect returns a Call for pattern, a method and a path such as
// "POST /run_sse" or "POST /apps/{app}/users/{user}/sessions".
func Expect(pattern string, resp Response) Call {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		panic(fmt.Sprintf("adktest: pattern %q: want \"METHOD /path\"", pattern))
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
	Method string
	// Path is the path as sent, escaped.
	Path    string
	Query   url.Values
	Header  http.Header
	Body    map[string]any // the decoded JSON body; nil without one
	RawBody []byte
}

func (r Request) String() string { return r.Method + " " + r.Path }

// NewServer starts a server that expects the calls of script in order.
func NewServer(t testing.TB, script ...Call) *Server {
	t.Helper()
	s := &Server{t: t, closing: make(chan struct{}), gone: make(chan string, 64), script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.close)
	return s
}

// URL is the server's base URL, for adk.NewClient.
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

// Find returns the received requests matching pattern, with {name}
// wildcards.
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

// Pending returns the scripted calls that have not come yet.
func (s *Server) Pending() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.script[s.next:]...)
}

// Gone receives "METHOD /path" for each stream whose client went away
// before the stream ended: the request was closed.
func (s *Server) Gone() <-chan string { return s.gone }

func (s *Server) close() {
	close(s.closing)
	s.srv.Close()
	if p := s.Pending(); len(p) > 0 {
		s.t.Errorf("adktest: %d scripted call(s) never came, first: %s", len(p), p[0])
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("adktest: reading body of %s %s: %v", r.Method, r.URL.Path, err)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query(), Header: r.Header.Clone(), RawBody: raw}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			s.t.Errorf("adktest: %s: body is not a JSON object: %v\n%s", req, err, raw)
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var call *Call
	if s.next < len(s.script) && s.script[s.next].matches(req.Method, req.Path) {
		call = &s.script[s.next]
		s.next++
	}
	next := "nothing (the script is done)"
	if s.next < len(s.script) {
		next = s.script[s.next].String()
	}
	s.mu.Unlock()
	if call == nil {
		s.t.Errorf("adktest: unexpected call %s\n  expected next: %s\n  body: %s", req, next, raw)
		Detail(http.StatusInternalServerError, "adktest: unexpected call "+req.String()).serve(s, w, r)
		return
	}
	call.Response.serve(s, w, r)
}

// Response is how the server answers a call.
type Response struct {
	status      int
	contentType string
	body        []byte
	stream      bool
	frames      []Frame
	crlf        bool
	piece       int
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
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("adktest: encoding %T: %v", v, err))
		}
		body = b
	}
	return Response{status: status, contentType: "application/json", body: body}
}

// Detail answers status with FastAPI's error body {"detail": msg}.
func Detail(status int, msg string) Response {
	return JSON(status, map[string]string{"detail": msg})
}

// Raw answers status with a body of any content type.
func Raw(status int, contentType, body string) Response {
	return Response{status: status, contentType: contentType, body: []byte(body)}
}

// Stream answers 200 with an event stream of frames, flushed one by one;
// the body ends after the last, as the API server's does.
func Stream(frames ...Frame) Response {
	return Response{status: http.StatusOK, stream: true, frames: frames}
}

// CRLF ends every line of the stream with \r\n.
func (resp Response) CRLF() Response {
	resp.crlf = true
	return resp
}

// InPieces writes the stream n bytes at a time, each flushed on its own:
// lines, JSON and UTF-8 characters arrive split across reads.
func (resp Response) InPieces(n int) Response {
	resp.piece = n
	return resp
}

// Frame is one event of a streamed answer, or a fault (Cut, Hang).
type Frame struct {
	// Data is the payload, written as one data: line.
	Data  string
	Delay time.Duration // how long to wait before sending it

	fault   fault
	partial *Frame
}

type fault uint8

const (
	faultNone fault = iota
	faultCut
	faultHang
)

// After returns f sent after a delay.
func (f Frame) After(d time.Duration) Frame {
	f.Delay = d
	return f
}

// Wire returns the frame as the API server writes it.
func (f Frame) Wire() string { return "data: " + f.Data + "\n\n" }

// Cut resets the connection halfway through writing f: the client gets
// part of the event and then a connection reset.
func Cut(f Frame) Frame { return Frame{fault: faultCut, partial: &f} }

// Hang stops sending and holds the stream open until the client goes away.
func Hang() Frame { return Frame{fault: faultHang} }

func (resp Response) serve(s *Server, w http.ResponseWriter, r *http.Request) {
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
	for _, f := range resp.frames {
		if f.Delay > 0 && !s.wait(r, f.Delay) {
			s.clientGone(r)
			return
		}
		switch f.fault {
		case faultHang:
			if !s.wait(r, -1) {
				s.clientGone(r)
			}
			return
		case faultCut:
			s.cut(rc, r, resp.wire(*f.partial))
			return
		}
		if !resp.write(w, rc, resp.wire(f)) {
			s.clientGone(r)
			return
		}
	}
}

func (resp Response) wire(f Frame) string {
	w := f.Wire()
	if resp.crlf {
		w = strings.ReplaceAll(w, "\n", "\r\n")
	}
	return w
}

// write writes one frame, in pieces if asked; false when the client is gone.
func (resp Response) write(w io.Writer, rc *http.ResponseController, wire string) bool {
	n := resp.piece
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
	}
	return true
}

func (s *Server) clientGone(r *http.Request) {
	if r.Context().Err() == nil {
		return // the server is closing, not the client
	}
	select {
	case s.gone <- r.Method + " " + r.URL.Path:
	default:
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
		s.t.Errorf("adktest: hijacking the connection to cut it: %v", err)
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
