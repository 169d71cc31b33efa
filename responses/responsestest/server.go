// Package responsestest is a scripted Responses API server for tests: an
// httptest.Server that answers an ordered script of expected calls with
// streams in the API's published wire format (Turn builds them), records
// every request, and delivers streams the way real networks do when asked:
// CRLF line ends, writes cut at odd byte counts (inside multibyte UTF-8
// characters and CRLF pairs), a connection reset in the middle of an
// event, a stream that hangs.
package responsestest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// ProjectPath is the path of the Foundry project endpoint on the server;
// the Responses API is under ProjectPath + "/openai/v1".
const ProjectPath = "/api/projects/responsestest"

// Server is a scripted upstream. Create it with NewServer; it is closed
// when the test ends, and the test fails if scripted calls never came.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	closing chan struct{}

	mu       sync.Mutex
	script   []Call
	next     int
	requests []Request
	gone     chan struct{} // closed when a client left a stream early
	goneOnce sync.Once
}

// Call is one expected request and its answer.
type Call struct {
	Method   string
	Path     string // operation path ("/responses", "/agents/{name}"); a {name} segment matches any segment
	Response Response
}

// Expect returns a Call for pattern, a method and an operation path such
// as "POST /responses" or "GET /responses/{id}".
func Expect(pattern string, resp Response) Call {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		panic(fmt.Sprintf("responsestest: pattern %q: want \"METHOD /path\"", pattern))
	}
	return Call{Method: method, Path: path, Response: resp}
}

func (c Call) String() string { return c.Method + " " + c.Path }

func (c Call) matches(method, path string) bool {
	if method != c.Method {
		return false
	}
	want, got := strings.Split(c.Path, "/"), strings.Split(path, "/")
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
	Path    string // operation path: after ProjectPath, and after /openai/v1
	Query   string
	Header  http.Header
	Body    map[string]any // the decoded JSON body; nil without one
	RawBody []byte
}

func (r Request) String() string { return r.Method + " " + r.Path }

// NewServer starts a server that expects the calls of script in order.
func NewServer(t testing.TB, script ...Call) *Server {
	t.Helper()
	s := &Server{t: t, closing: make(chan struct{}), script: script, gone: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.close)
	return s
}

// Project is the Foundry project endpoint to configure.
func (s *Server) Project() string { return s.srv.URL + ProjectPath }

// BaseURL is the Responses API base URL: Project() + "/openai/v1".
func (s *Server) BaseURL() string { return s.Project() + "/openai/v1" }

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

// Find returns the received requests matching pattern.
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

// ClientGone is closed once a client has gone away from a stream before
// its end (a hang, or a stream it stopped reading).
func (s *Server) ClientGone() <-chan struct{} { return s.gone }

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
		s.t.Errorf("responsestest: %d scripted call(s) never came, first: %s", len(p), p[0])
	}
}

// operationPath is path after the project and the /openai/v1 prefix.
func operationPath(path string) string {
	p := strings.TrimPrefix(path, ProjectPath)
	return strings.TrimPrefix(p, "/openai/v1")
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("responsestest: reading body of %s %s: %v", r.Method, r.URL.Path, err)
		return
	}
	req := Request{Method: r.Method, Path: operationPath(r.URL.Path), Query: r.URL.RawQuery, Header: r.Header.Clone(), RawBody: raw}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			s.t.Errorf("responsestest: %s: body is not a JSON object: %v\n%s", req, err, raw)
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var call *Call
	if s.next < len(s.script) && s.script[s.next].matches(req.Method, req.Path) && strings.HasPrefix(r.URL.Path, ProjectPath+"/") {
		call = &s.script[s.next]
		s.next++
	}
	next := "nothing (the script is done)"
	if s.next < len(s.script) {
		next = s.script[s.next].String()
	}
	s.mu.Unlock()
	if call == nil {
		s.t.Errorf("responsestest: unexpected call %s (path %s)\n  expected next: %s", req, r.URL.Path, next)
		JSON(http.StatusInternalServerError, errorBody("unexpected_call", "responsestest: unexpected call "+req.String())).serve(s, w, r)
		return
	}
	resp := call.Response
	if resp.dynamic != nil {
		resp = resp.dynamic(req)
	}
	resp.serve(s, w, r)
}

// Response is how the server answers a call.
type Response struct {
	status      int
	contentType string
	body        []byte
	stream      bool
	events      []Event
	crlf        bool
	chunk       int
	dynamic     func(Request) Response
}

// Respond answers with what f makes of the request, for answers that
// depend on it (an id or URL the client generated).
func Respond(f func(Request) Response) Response { return Response{dynamic: f} }

// JSON answers status with v encoded as JSON (v may be a string of ready
// JSON).
func JSON(status int, v any) Response {
	body, ok := v.(string)
	if !ok {
		body = Encode(v)
	}
	return Response{status: status, contentType: "application/json", body: []byte(body)}
}

// Error answers status with the API's error body
// {"error":{"message","type","param","code"}}.
func Error(status int, code, message string) Response {
	return JSON(status, errorBody(code, message))
}

// Raw answers status with a body of any content type.
func Raw(status int, contentType, body string) Response {
	return Response{status: status, contentType: contentType, body: []byte(body)}
}

// Stream answers 200 with an event stream of events, flushed one by one.
func Stream(events ...Event) Response {
	return Response{status: http.StatusOK, stream: true, events: events}
}

// CRLF ends the stream's lines in "\r\n".
func (r Response) CRLF() Response { r.crlf = true; return r }

// Chunked writes the stream n bytes at a time, each flushed, and yields
// to other goroutines between them so that an in-process client reads
// them apart: lines, events, CRLF pairs and UTF-8 sequences arrive split
// wherever n falls.
func (r Response) Chunked(n int) Response {
	r.chunk = n
	return r
}

func (resp Response) serve(s *Server, w http.ResponseWriter, r *http.Request) {
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
		switch ev.fault {
		case faultHang:
			s.wait(r, -1)
			s.markGone()
			return
		case faultCut:
			s.cut(rc, r, ev.partial.Wire(resp.crlf))
			return
		}
		if !resp.write(w, rc, ev.Wire(resp.crlf)) {
			s.markGone()
			return
		}
	}
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

func (s *Server) markGone() { s.goneOnce.Do(func() { close(s.gone) }) }

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
		s.t.Errorf("responsestest: hijacking the connection to cut it: %v", err)
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

func errorBody(code, message string) Object {
	return Object{{"error", Object{{"message", message}, {"type", "invalid_request_error"}, {"param", nil}, {"code", code}}}}
}
