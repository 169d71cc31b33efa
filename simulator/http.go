package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/internal/jsonw"
)

// httpError is a non-2xx answer: in the service's error shape on the
// Foundry faces, FastAPI's {"detail": ...} on the ADK face.
type httpError struct {
	status  int
	code    string
	message string
	param   string
	header  http.Header // sent with it (a refusal's retry-after-ms)
	detail  any         // the ADK face's detail when not the message
}

func (e *httpError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message)
}

func badRequest(param, format string, args ...any) *httpError {
	return &httpError{status: http.StatusBadRequest, code: "invalid_request", message: fmt.Sprintf(format, args...), param: param}
}

func notFound(kind, id string) *httpError {
	return &httpError{status: http.StatusNotFound, code: "not_found", message: fmt.Sprintf("No %s found with id '%s'.", kind, id)}
}

// ServeHTTP answers one threads/runs API call, or one ADK API server call
// (the ADK face, adk.go). Operation paths may come after any
// /api/projects/<name> prefix.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if s.count(w, req) {
		return
	}
	var err error
	adk := isADKPath(req.URL.Path)
	if op, ok := responsesOperation(req.URL.Path); adk {
		err = s.routeADK(w, req)
	} else if ok {
		err = s.routeResponses(w, req, op)
	} else {
		err = s.routeThreads(w, req)
	}
	if err != nil {
		writeError(w, err, adk)
	}
}

// route is one operation of a Foundry face: a method and a path whose
// "*" segments (or "**", the rest) are the handler's ids.
type route struct {
	method, path string
	serve        func(s *Simulator, w http.ResponseWriter, req *http.Request, ids []string) error
}

// dispatch serves op with the routes of the first path it fits; another
// method is refused with the last of them.
func (s *Simulator) dispatch(w http.ResponseWriter, req *http.Request, op string, routes []route) error {
	seg := strings.Split(strings.Trim(op, "/"), "/")
	path, want := "", ""
	for _, rt := range routes {
		ids, ok := match(rt.path, seg)
		switch {
		case !ok || (path != "" && rt.path != path):
			continue
		case rt.method == req.Method:
			return rt.serve(s, w, req, ids)
		}
		path, want = rt.path, rt.method
	}
	if path == "" {
		return noOperation(req)
	}
	return &httpError{status: http.StatusMethodNotAllowed, code: "method_not_allowed", message: "Use " + want + "."}
}

// match reports whether path segments seg fit pattern, with the segments
// its wildcards took.
func match(pattern string, seg []string) ([]string, bool) {
	parts := strings.Split(pattern, "/")
	var ids []string
	for i, p := range parts {
		switch {
		case p == "**":
			return append(ids, seg[min(i, len(seg)):]...), true
		case i >= len(seg) || (p != "*" && p != seg[i]):
			return nil, false
		case p == "*":
			ids = append(ids, seg[i])
		}
	}
	return ids, len(parts) == len(seg)
}

func noOperation(req *http.Request) error {
	return &httpError{status: http.StatusNotFound, code: "not_found", message: "No such operation: " + req.Method + " " + req.URL.Path}
}

// needAPIVersion refuses a call without ?api-version=, as the service does.
func needAPIVersion(req *http.Request) error {
	if req.URL.Query().Get("api-version") == "" {
		return &httpError{status: http.StatusBadRequest, code: "MissingApiVersionParameter",
			message: "The api-version query parameter (?api-version=) is required for all requests.", param: "api-version"}
	}
	return nil
}

// operationPath drops an /api/projects/<name> prefix.
func operationPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/api/projects/")
	if !ok {
		return p
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return "/"
}

// authorized accepts any bearer token: the simulator checks presence only.
func authorized(req *http.Request) bool {
	scheme, token, ok := strings.Cut(req.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(token) != ""
}

// writeError answers err in the service's error shape, or in FastAPI's
// ({"detail": ...}) on the ADK face.
func writeError(w http.ResponseWriter, err error, fastAPI bool) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{status: http.StatusInternalServerError, code: "server_error", message: "internal simulator error"}
	}
	for k, v := range he.header {
		w.Header()[k] = v
	}
	if fastAPI {
		detail := he.detail
		if detail == nil {
			detail = he.message
		}
		_ = writeJSON(w, he.status, map[string]any{"detail": detail}) // the client is gone if this fails
		return
	}
	body := foundrywire.ErrorBody{Error: foundrywire.APIError{Code: he.code, Message: he.message, Type: "invalid_request_error"}}
	if he.status >= 500 {
		body.Error.Type = "server_error"
	}
	if he.param != "" {
		body.Error.Param = ptr(he.param)
	}
	_ = writeJSON(w, he.status, body) // the client is gone if this fails
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := jsonw.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write response: %w", err)
	}
	return nil
}

// decode reads a JSON body; an empty body is allowed when optional.
func decode(w http.ResponseWriter, req *http.Request, v any, optional bool) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxBodyBytes))
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		var wrongType *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			return &httpError{status: http.StatusRequestEntityTooLarge, code: "request_too_large",
				message: fmt.Sprintf("The request body is over %d bytes.", maxBodyBytes)}
		case errors.Is(err, io.EOF) && optional:
			return nil
		case errors.Is(err, io.EOF):
			return badRequest("", "The request body is empty.")
		case errors.As(err, &wrongType):
			return badRequest(wrongType.Field, "Invalid type for '%s': expected %s, got %s.", wrongType.Field, wrongType.Type, wrongType.Value)
		}
		return badRequest("", "The request body is not valid JSON: %v", err)
	}
	return nil
}

// paginate pages items, oldest first, as a list call asks: order
// ("desc", the default, or "asc"), those after the item named by after,
// limit of them (1 to 100, 20 by default).
func paginate[T any](q url.Values, items []T, id func(T) string) (page []T, hasMore bool, err error) {
	limit := 20
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
			return nil, false, badRequest("limit", "limit must be between 1 and 100.")
		}
	}
	switch q.Get("order") {
	case "", "desc":
		items = slices.Clone(items)
		slices.Reverse(items)
	case "asc":
	default:
		return nil, false, badRequest("order", "order must be 'asc' or 'desc'.")
	}
	if after := q.Get("after"); after != "" {
		i := slices.IndexFunc(items, func(v T) bool { return id(v) == after })
		if i < 0 {
			return nil, false, &httpError{status: http.StatusNotFound, code: "not_found", param: "after",
				message: fmt.Sprintf("Item with id '%s' not found.", after)}
		}
		items = items[i+1:]
	}
	page = items[:min(limit, len(items))]
	return page, len(items) > len(page), nil
}

// held answers a copy of what get finds, taken under mu.
func held[T any](w http.ResponseWriter, mu *sync.Mutex, get func() (T, error)) error {
	mu.Lock()
	v, err := get()
	mu.Unlock()
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

// contentText reads a message's content, a string or an array of text
// parts ("text", "input_text" or "output_text", their text a string or
// {"value": ...}), and checks it (checkText).
func contentText(raw json.RawMessage, param string) (string, error) {
	var text string
	if json.Unmarshal(raw, &text) != nil {
		var parts []struct {
			Type string          `json:"type"`
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(raw, &parts) != nil {
			return "", badRequest(param, "content must be a string or an array of content parts")
		}
		var texts []string
		for _, p := range parts {
			if p.Type != "text" && p.Type != "input_text" && p.Type != "output_text" {
				continue
			}
			var t struct {
				Value string `json:"value"`
			}
			if json.Unmarshal(p.Text, &t.Value) != nil && json.Unmarshal(p.Text, &t) != nil {
				return "", badRequest(param, "a text part's text must be a string")
			}
			texts = append(texts, t.Value)
		}
		text = strings.Join(texts, "\n")
	}
	return text, checkText(text, param)
}

// checkText refuses an empty message and one over maxMessageRunes.
func checkText(text, param string) error {
	if strings.TrimSpace(text) == "" {
		return badRequest(param, "The message is empty.")
	}
	if utf8.RuneCountInString(text) > maxMessageRunes {
		return badRequest(param, "The message is over %d characters.", maxMessageRunes)
	}
	return nil
}

// readTools reads the tools a request offers and the names of its
// function tools: nested ({"function":{"name"}}) on threads, flat
// ({"name"}) on Responses.
func readTools(raw json.RawMessage, nested bool) ([]json.RawMessage, map[string]bool, error) {
	var tools []json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, nil, badRequest("tools", "tools must be an array of tool definitions.")
	}
	names := map[string]bool{}
	for i, t := range tools {
		var def struct {
			Type     string `json:"type"`
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(t, &def); err != nil || def.Type == "" {
			return nil, nil, badRequest(fmt.Sprintf("tools[%d].type", i), "Missing required parameter: 'tools[%d].type'.", i)
		}
		name, param := def.Name, fmt.Sprintf("tools[%d].name", i)
		if nested {
			name, param = def.Function.Name, fmt.Sprintf("tools[%d].function.name", i)
		}
		if def.Type == "function" {
			if name == "" {
				// On Responses, the Chat Completions shape ({"function":{"name"}}) lands here.
				return nil, nil, badRequest(param, "Missing required parameter: '%s'.", param)
			}
			names[name] = true
		}
	}
	return tools, names, nil
}
