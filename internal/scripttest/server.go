// Package scripttest is an HTTP server for tests that answers an ordered
// script of expected calls: it matches each request against the next
// call, fails the test on a call that was not expected and on calls that
// never came, records every request, and delivers answers the way real
// services and networks do (event streams flushed event by event, CRLF
// line ends, writes cut at odd byte counts, a connection reset in the
// middle of an event, a stream that hangs, an answer held at a gate).
//
// It knows no wire format: the stand-in of each service (foundrytest,
// responsestest, adktest) configures it with its paths and error body and
// builds the payloads.
package scripttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/brainwire/brainwire/internal/textcut"
)

// Options are what a stand-in tells the server about its service.
type Options struct {
	// Name starts the failures the server reports ("foundrytest").
	Name string
	// Path returns the operation path of r that calls are matched
	// against, and false when r is outside the service (it then matches
	// no call). Without it, the escaped path as sent.
	Path func(r *http.Request) (path string, ok bool)
	// Unscripted answers calls outside the script the service answers
	// whenever they come; it reports whether it answered.
	Unscripted func(w http.ResponseWriter, req Request) bool
}

// Server is a scripted upstream. Create it with New; it is closed when
// the test ends, and the test fails if scripted calls never came.
type Server struct {
	t       testing.TB
	opts    Options
	srv     *httptest.Server
	closing chan struct{}
	gone    chan string // each stream a client left

	mu       sync.Mutex
	script   []Call
	next     int
	requests []Request
}

// Call is one expected request and its answer.
type Call struct {
	Method   string
	Path     string // operation path; a {name} segment matches any segment
	Response Response
}

// Expect returns a Call for pattern, a method and an operation path such
// as "POST /threads/runs" or "GET /responses/{id}".
func Expect(pattern string, resp Response) Call {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		panic(fmt.Sprintf("scripttest: pattern %q: want \"METHOD /path\"", pattern))
	}
	return Call{Method: method, Path: path, Response: resp}
}

func (c Call) String() string { return c.Method + " " + c.Path }

// Matches reports whether a request for method and operation path is c.
func (c Call) Matches(method, path string) bool {
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
	Path    string // the operation path (Options.Path)
	Query   url.Values
	Header  http.Header
	Body    map[string]any // the decoded JSON body; nil without one
	RawBody []byte
}

func (r Request) String() string { return r.Method + " " + r.Path }

// New starts a server that expects the calls of script in order.
func New(t testing.TB, opts Options, script ...Call) *Server {
	t.Helper()
	s := &Server{t: t, opts: opts, closing: make(chan struct{}), gone: make(chan string, 64), script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.close)
	return s
}

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
		if c.Matches(r.Method, r.Path) {
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
// before the stream ended.
func (s *Server) Gone() <-chan string { return s.gone }

// Errorf reports a failure of the test the server runs in.
func (s *Server) Errorf(format string, args ...any) {
	s.t.Errorf(s.opts.Name+": "+format, args...)
}

func (s *Server) close() {
	close(s.closing)
	s.srv.Close()
	if p := s.Pending(); len(p) > 0 {
		s.Errorf("%d scripted call(s) never came, first: %s", len(p), p[0])
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.Errorf("reading body of %s %s: %v", r.Method, r.URL.Path, err)
		return
	}
	path, inside := r.URL.EscapedPath(), true
	if s.opts.Path != nil {
		path, inside = s.opts.Path(r)
	}
	req := Request{Method: r.Method, Path: path, Query: r.URL.Query(), Header: r.Header.Clone(), RawBody: raw}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			s.Errorf("%s: body is not a JSON object: %v\n%s", req, err, raw)
		}
	}

	s.mu.Lock()
	s.requests = append(s.requests, req)
	var call *Call
	if inside && s.next < len(s.script) && s.script[s.next].Matches(req.Method, req.Path) {
		call = &s.script[s.next]
		s.next++
	}
	next := "nothing (the script is done)"
	if s.next < len(s.script) {
		next = s.script[s.next].String()
	}
	s.mu.Unlock()

	if call != nil {
		resp := call.Response
		if resp.dynamic != nil {
			resp = resp.dynamic(req)
		}
		resp.serve(s, w, r)
		return
	}
	if s.opts.Unscripted != nil && s.opts.Unscripted(w, req) {
		return
	}
	s.Errorf("unexpected call %s (path %s)\n  expected next: %s\n  body: %s", req, r.URL.Path, next, textcut.Ellipsis(string(raw), 300))
	// The test has failed already: any error answer will do.
	JSON(http.StatusInternalServerError, `{"error":{"message":"unexpected call"}}`).serve(s, w, r)
}

// clientLeft notes that the client of r went away before its stream
// ended; a server closing is not a client leaving.
func (s *Server) clientLeft(r *http.Request) {
	if r.Context().Err() == nil {
		return
	}
	select {
	case s.gone <- r.Method + " " + r.URL.Path:
	default:
	}
}
