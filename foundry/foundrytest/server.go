// Package foundrytest is a scripted Foundry Agent Service for tests: an
// httptest.Server speaking the threads/runs REST and SSE protocol that
// answers an ordered script of expected calls, records every request, and
// can break streams the way real networks do (a connection reset in the
// middle of an event, a stream that hangs, a stream that ends without
// done). The builders in this package write their payloads through
// foundrywire, as the simulator does.
package foundrytest

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/internal/scripttest"
)

// ProjectPath is the path of the project endpoint on the server.
const ProjectPath = "/api/projects/foundrytest"

// The script and its answers, as internal/scripttest serves them.
type (
	// Call is one expected request and its answer.
	Call = scripttest.Call
	// Request is a request the server received; its Path is the
	// operation path, after ProjectPath.
	Request = scripttest.Request
	// Response is how the server answers a call.
	Response = scripttest.Response
	// Event is one event of a streamed answer, or a fault (Cut, Hang).
	Event = scripttest.Event
	// Gate holds answers where a test wants them held.
	Gate = scripttest.Gate
)

// Server is a scripted upstream. Create it with NewServer; it is closed
// when the test ends, and the test fails if scripted calls never came.
type Server struct {
	*scripttest.Server

	mu         sync.Mutex
	cancelling map[string]bool // run ids a cancel was received for
}

// Expect returns a Call for pattern, a method and an operation path such as
// "POST /threads/runs" or "POST /threads/{t}/runs/{r}/submit_tool_outputs".
func Expect(pattern string, resp Response) Call { return scripttest.Expect(pattern, resp) }

// NewServer starts a server that expects the calls of script in order.
// Cancel (POST .../runs/{r}/cancel) and get-run (GET .../runs/{r}) calls
// are answered whenever they come and are not next in the script: cancel
// with the run in status cancelling, get with in_progress (or cancelling
// once cancelled).
func NewServer(t testing.TB, script ...Call) *Server {
	t.Helper()
	s := &Server{cancelling: make(map[string]bool)}
	s.Server = scripttest.New(t, scripttest.Options{
		Name: "foundrytest",
		Path: func(r *http.Request) (string, bool) {
			return strings.TrimPrefix(r.URL.Path, ProjectPath), strings.HasPrefix(r.URL.Path, ProjectPath+"/")
		},
		Unscripted: s.auto,
	}, script...)
	return s
}

// Endpoint is the project endpoint to give the client under test.
func (s *Server) Endpoint() string { return s.URL() + ProjectPath }

// Cancels returns the cancel requests received so far.
func (s *Server) Cancels() []Request {
	return s.Find("POST /threads/{t}/runs/{r}/cancel")
}

// auto answers cancel and get-run calls outside the script.
func (s *Server) auto(w http.ResponseWriter, req Request) bool {
	parts := strings.Split(strings.TrimPrefix(req.Path, "/"), "/")
	var status string
	switch {
	case req.Method == http.MethodPost && len(parts) == 5 && parts[0] == "threads" && parts[2] == "runs" && parts[4] == "cancel":
		s.mu.Lock()
		s.cancelling[parts[3]] = true
		s.mu.Unlock()
		status = "cancelling"
	case req.Method == http.MethodGet && len(parts) == 4 && parts[0] == "threads" && parts[2] == "runs":
		s.mu.Lock()
		status = "in_progress"
		if s.cancelling[parts[3]] {
			status = "cancelling"
		}
		s.mu.Unlock()
	default:
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(Encode(NewRun(parts[1], parts[3]).Object(status))))
	return true
}

// JSON answers status with v encoded as JSON (v may be a string or []byte
// of ready JSON).
func JSON(status int, v any) Response { return scripttest.JSON(status, v) }

// Error answers status with the service's error body
// {"error":{"message","type","param","code"}}.
func Error(status int, code, message string) Response {
	return JSON(status, foundrywire.ErrorBody{Error: foundrywire.APIError{Code: code, Message: message, Type: "invalid_request_error"}})
}

// Raw answers status with a body of any content type.
func Raw(status int, contentType, body string) Response {
	return scripttest.Raw(status, contentType, body)
}

// Stream answers 200 with an event stream of events, flushed one by one.
// The stream ends after the last event; add Done() to end it properly.
func Stream(events ...Event) Response {
	return scripttest.Stream(events...).WithHeader("Cache-Control", "no-cache")
}

// NewGate returns a closed gate.
func NewGate() *Gate { return scripttest.NewGate() }

// Cut resets the connection halfway through writing ev: the client gets
// part of the event and then a connection reset.
func Cut(ev Event) Event { return scripttest.Cut(ev) }

// Hang stops sending and holds the stream open until the client goes away.
func Hang() Event { return scripttest.Hang() }

// Encode returns v as one line of JSON, without HTML escaping.
func Encode(v any) string { return scripttest.Encode(v) }
