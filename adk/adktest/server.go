// Package adktest is a scripted ADK API server for tests: an
// httptest.Server speaking the REST routes and the /run_sse event stream
// of `adk api_server` that answers an ordered script of expected calls,
// records every request, and can deliver streams the way networks do (in
// odd pieces, with CRLF line ends) or break them (a connection reset in
// the middle of an event, a stream that hangs). The builders in events.go
// produce events shaped like the server's.
package adktest

import (
	"net/http"
	"testing"

	"github.com/brainwire/brainwire/internal/scripttest"
)

// The script and its answers, as internal/scripttest serves them.
type (
	// Call is one expected request and its answer.
	Call = scripttest.Call
	// Request is a request the server received; its Path is the path
	// as sent, escaped.
	Request = scripttest.Request
	// Response is how the server answers a call.
	Response = scripttest.Response
	// Frame is one event of a streamed answer (its Data written as
	// data: lines), or a fault (Cut, Hang).
	Frame = scripttest.Event
)

// Server is a scripted upstream. Create it with NewServer; it is closed
// when the test ends, and the test fails if scripted calls never came.
type Server struct{ *scripttest.Server }

// Expect returns a Call for pattern, a method and a path such as
// "POST /run_sse" or "POST /apps/{app}/users/{user}/sessions".
func Expect(pattern string, resp Response) Call { return scripttest.Expect(pattern, resp) }

// NewServer starts a server that expects the calls of script in order.
func NewServer(t testing.TB, script ...Call) *Server {
	t.Helper()
	return &Server{scripttest.New(t, scripttest.Options{
		Name: "adktest",
	}, script...)}
}

// JSON answers status with v encoded as JSON (v may be a string or []byte
// of ready JSON).
func JSON(status int, v any) Response { return scripttest.JSON(status, v) }

// Detail answers status with FastAPI's error body {"detail": msg}.
func Detail(status int, msg string) Response {
	return JSON(status, map[string]string{"detail": msg})
}

// Raw answers status with a body of any content type.
func Raw(status int, contentType, body string) Response {
	return scripttest.Raw(status, contentType, body)
}

// Stream answers 200 with an event stream of frames, flushed one by one;
// the body ends after the last, as the API server's does.
func Stream(frames ...Frame) Response { return scripttest.Stream(frames...) }

// Cut resets the connection halfway through writing f: the client gets
// part of the event and then a connection reset.
func Cut(f Frame) Frame { return scripttest.Cut(f) }

// Hang stops sending and holds the stream open until the client goes away.
func Hang() Frame { return scripttest.Hang() }

// Apps answers 200 with the apps the server serves, as GET /list-apps
// does: a JSON array of their names.
func Apps(names ...string) Response {
	if names == nil {
		names = []string{}
	}
	return JSON(http.StatusOK, names)
}
