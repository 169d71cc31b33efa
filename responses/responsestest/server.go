// Package responsestest is a scripted Responses API server for tests: an
// httptest.Server that answers an ordered script of expected calls with
// streams in the API's published wire format (Turn builds them), records
// every request, and delivers streams the way real networks do when asked:
// CRLF line ends, writes cut at odd byte counts (inside multibyte UTF-8
// characters and CRLF pairs), a connection reset in the middle of an
// event, a stream that hangs.
package responsestest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/internal/scripttest"
	"github.com/brainwire/brainwire/responses/responseswire"
)

// ProjectPath is the path of the Foundry project endpoint on the server;
// the Responses API is under ProjectPath + "/openai/v1".
const ProjectPath = "/api/projects/responsestest"

// The script and its answers, as internal/scripttest serves them.
type (
	// Call is one expected request and its answer.
	Call = scripttest.Call
	// Request is a request the server received; its Path is the
	// operation path, after ProjectPath and /openai/v1.
	Request = scripttest.Request
	// Response is how the server answers a call.
	Response = scripttest.Response
	// Event is one event of a streamed answer, or a fault (Cut, Hang).
	Event = scripttest.Event
)

// Server is a scripted upstream. Create it with NewServer; it is closed
// when the test ends, and the test fails if scripted calls never came.
type Server struct{ *scripttest.Server }

// Expect returns a Call for pattern, a method and an operation path such
// as "POST /responses" or "GET /responses/{id}".
func Expect(pattern string, resp Response) Call { return scripttest.Expect(pattern, resp) }

// NewServer starts a server that expects the calls of script in order.
func NewServer(t testing.TB, script ...Call) *Server {
	t.Helper()
	return &Server{scripttest.New(t, scripttest.Options{
		Name: "responsestest",
		Path: func(r *http.Request) (string, bool) {
			p := strings.TrimPrefix(r.URL.Path, ProjectPath)
			return strings.TrimPrefix(p, "/openai/v1"), strings.HasPrefix(r.URL.Path, ProjectPath+"/")
		},
	}, script...)}
}

// Project is the Foundry project endpoint to configure.
func (s *Server) Project() string { return s.URL() + ProjectPath }

// BaseURL is the Responses API base URL: Project() + "/openai/v1".
func (s *Server) BaseURL() string { return s.Project() + "/openai/v1" }

// Respond answers with what f makes of the request, for answers that
// depend on it (an id or URL the client generated).
func Respond(f func(Request) Response) Response { return scripttest.Respond(f) }

// JSON answers status with v encoded as JSON (v may be a string of ready
// JSON).
func JSON(status int, v any) Response { return scripttest.JSON(status, v) }

// Error answers status with the API's error body
// {"error":{"message","type","param","code"}}.
func Error(status int, code, message string) Response {
	return JSON(status, responseswire.ErrorBody{Error: responseswire.APIError{Message: message, Type: "invalid_request_error", Code: code}})
}

// Raw answers status with a body of any content type.
func Raw(status int, contentType, body string) Response {
	return scripttest.Raw(status, contentType, body)
}

// Stream answers 200 with an event stream of events, flushed one by one.
func Stream(events ...Event) Response {
	return scripttest.Stream(events...).WithHeader("Cache-Control", "no-cache")
}

// Cut resets the connection halfway through writing ev.
func Cut(ev Event) Event { return scripttest.Cut(ev) }

// Hang stops sending and holds the stream open until the client goes away.
func Hang() Event { return scripttest.Hang() }

// Done is the "data: [DONE]" line some servers end a stream with.
func Done() Event { return Event{Data: "[DONE]"} }

// Model answers 200 with the model object of id, as GET /models/{model}
// does.
func Model(id string) Response { return JSON(http.StatusOK, responseswire.NewModel(id, "system")) }

// Deployment answers 200 with the Foundry project's deployment name of
// model, as GET {project}/deployments/{name}?api-version=v1 does. Its
// path on the server is outside the Responses API: Requests names it
// "/deployments/{name}" all the same.
func Deployment(name, model string) Response {
	return JSON(http.StatusOK, responseswire.NewDeployment(name, model))
}
