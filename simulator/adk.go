package simulator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/brainwire/brainwire/adk/adkwire"
	"github.com/brainwire/brainwire/internal/jsonw"
)

// DefaultADKApp is the app the ADK face serves.
const DefaultADKApp = "brainwire_classifier"

// adkAuthor is the simulated agent's name, the author of its events.
const adkAuthor = "classifier"

// isADKPath reports whether a path is one of the ADK API server's routes.
func isADKPath(p string) bool {
	return p == "/run_sse" || p == "/list-apps" || strings.HasPrefix(p, "/apps/")
}

// adkDetail is a non-2xx answer in FastAPI's shape: {"detail": message}.
func adkDetail(status int, format string, args ...any) *httpError {
	return &httpError{status: status, message: fmt.Sprintf(format, args...)}
}

// adkInvalid is FastAPI's 422 for a body that fails validation.
func adkInvalid(loc []any, msg string) *httpError {
	return &httpError{status: http.StatusUnprocessableEntity, message: msg, detail: []map[string]any{
		{"type": "value_error", "loc": append([]any{"body"}, loc...), "msg": msg, "input": nil},
	}}
}

// adkSession is one conversation of the ADK face. Guarded by Simulator.mu.
type adkSession struct {
	key string
	// obj is the session as GET answers it: its events are the messages
	// the server took and the agent's events but the partial ones, as
	// ADK records them (at most maxSessionEvents, the oldest dropped).
	obj      adkwire.Session
	messages []*message // the user's messages

	invocation string      // the run in progress or paused
	pending    []*toolCall // calls handed over, awaiting responses
	mem        runMemory
	context    int64 // tokens the agent has read or written
}

func sessionKey(app, user, id string) string { return app + "\x00" + user + "\x00" + id }

// routeADK answers one ADK API server call. The server has no
// authentication; like it, the face refuses a non-GET request whose
// Origin header names another site.
func (s *Simulator) routeADK(w http.ResponseWriter, req *http.Request) error {
	if o := req.Header.Get("Origin"); o != "" && req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "Forbidden: origin not allowed")
		return nil
	}
	p := req.URL.Path
	seg := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case p == "/list-apps":
		return adkMethod(req.Method, http.MethodGet, func() error { return writeJSON(w, http.StatusOK, []string{DefaultADKApp}) })
	case p == "/run_sse":
		return adkMethod(req.Method, http.MethodPost, func() error { return s.runSSE(w, req) })
	case len(seg) == 5 && seg[0] == "apps" && seg[2] == "users" && seg[4] == "sessions":
		return adkMethod(req.Method, http.MethodPost, func() error { return s.createSession(w, req, seg[1], seg[3]) })
	case len(seg) == 6 && seg[0] == "apps" && seg[2] == "users" && seg[4] == "sessions":
		return adkMethod(req.Method, http.MethodGet, func() error { return s.getSession(w, seg[1], seg[3], seg[5]) })
	}
	return adkDetail(http.StatusNotFound, "Not Found")
}

func adkMethod(got, want string, h func() error) error {
	if got != want {
		return adkDetail(http.StatusMethodNotAllowed, "Method Not Allowed")
	}
	return h()
}

func (s *Simulator) checkApp(app string) error {
	switch {
	case strings.HasPrefix(app, "__"):
		return adkDetail(http.StatusForbidden, "Access to app %q is not allowed.", app)
	case app != DefaultADKApp:
		return adkDetail(http.StatusNotFound, "Agent not found: '%s'", app)
	}
	return nil
}

func (s *Simulator) createSession(w http.ResponseWriter, req *http.Request, app, user string) error {
	if err := s.checkApp(app); err != nil {
		return err
	}
	var body struct {
		SessionID string          `json:"sessionId"`
		State     json.RawMessage `json:"state"`
	}
	if err := decode(w, req, &body, true); err != nil {
		return adkInvalid(nil, err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := body.SessionID
	if id == "" {
		id = s.uuid()
	}
	key := sessionKey(app, user, id)
	if _, ok := s.adk.get(key); ok {
		return adkDetail(http.StatusConflict, "Session already exists: %s", id)
	}
	ss := &adkSession{key: key, obj: adkwire.Session{ID: id, AppName: app, UserID: user,
		State: orDefault(body.State, `{}`), Events: []adkwire.Event{}, LastUpdateTime: adkwire.Time(s.cfg.Now())}}
	s.adk.put(key, ss, len(ss.obj.State))
	return writeJSON(w, http.StatusOK, ss.obj)
}

// getSession answers a session with its events, as the server does for
// any app: 404 when it has none of that id.
func (s *Simulator) getSession(w http.ResponseWriter, app, user, id string) error {
	s.mu.Lock()
	ss, ok := s.adk.get(sessionKey(app, user, id))
	var obj adkwire.Session
	if ok {
		obj = ss.obj
		obj.Events = slices.Clone(obj.Events)
	}
	s.mu.Unlock()
	if !ok {
		return adkDetail(http.StatusNotFound, "Session not found")
	}
	return writeJSON(w, http.StatusOK, obj)
}

// adkRunRequest is /run_sse's body, as brainwire's client sends it.
type adkRunRequest struct {
	App        string          `json:"appName"`
	User       string          `json:"userId"`
	Session    string          `json:"sessionId"`
	NewMessage json.RawMessage `json:"newMessage"`
	Streaming  bool            `json:"streaming"`
	message    adkMessage
}

type adkMessage struct {
	texts     []string
	responses []adkResponse
}

type adkResponse struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

func parseRunRequest(w http.ResponseWriter, req *http.Request) (*adkRunRequest, error) {
	r := &adkRunRequest{}
	if err := decode(w, req, r, false); err != nil {
		var he *httpError
		switch {
		case errors.As(err, &he) && he.status == http.StatusRequestEntityTooLarge:
			return nil, he
		case errors.As(err, &he) && he.param != "":
			return nil, adkInvalid([]any{he.param}, he.message)
		}
		return nil, adkInvalid(nil, "JSON decode error")
	}
	switch {
	case r.User == "":
		return nil, adkInvalid([]any{"userId"}, "Field required")
	case r.Session == "":
		return nil, adkInvalid([]any{"sessionId"}, "Field required")
	}
	var err error
	if r.message, err = parseNewMessage(r.NewMessage); err != nil {
		return nil, err
	}
	return r, nil
}

// parseNewMessage reads a genai Content, which forbids unknown members.
func parseNewMessage(raw json.RawMessage) (adkMessage, error) {
	var m adkMessage
	if len(raw) == 0 || string(raw) == "null" {
		return m, adkInvalid([]any{"newMessage"}, "Field required (the simulated app is not resumable)")
	}
	var content struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             *string         `json:"text"`
			Thought          *bool           `json:"thought"`
			FunctionResponse *adkResponse    `json:"functionResponse"`
			FunctionCall     json.RawMessage `json:"functionCall"`
		} `json:"parts"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&content); err != nil {
		return m, adkInvalid([]any{"newMessage"}, "Invalid content: "+err.Error())
	}
	for i, p := range content.Parts {
		switch fr := p.FunctionResponse; {
		case p.FunctionCall != nil:
			return m, adkInvalid([]any{"newMessage", "parts", i}, "User message cannot contain function calls.")
		case fr != nil:
			var obj map[string]json.RawMessage
			if json.Unmarshal(fr.Response, &obj) != nil {
				return m, adkInvalid([]any{"newMessage", "parts", i, "functionResponse", "response"}, "Input should be a valid dictionary")
			}
			m.responses = append(m.responses, *fr)
		case p.Text != nil:
			if utf8.RuneCountInString(*p.Text) > maxMessageRunes {
				return m, adkInvalid([]any{"newMessage", "parts", i, "text"}, fmt.Sprintf("The message is over %d characters.", maxMessageRunes))
			}
			m.texts = append(m.texts, *p.Text)
		}
	}
	if len(m.texts) == 0 && len(m.responses) == 0 {
		return m, adkInvalid([]any{"newMessage", "parts"}, "The message has no text and no function response.")
	}
	return m, nil
}

func (s *Simulator) runSSE(w http.ResponseWriter, req *http.Request) error {
	r, err := parseRunRequest(w, req)
	if err != nil {
		return err
	}
	if r.App == "" {
		return adkDetail(http.StatusBadRequest, "app_name is required when ADK_DEFAULT_APP_NAME is not set")
	}
	if err := s.checkApp(r.App); err != nil {
		return err
	}
	s.mu.Lock()
	ss, ok := s.adk.get(sessionKey(r.App, r.User, r.Session))
	if !ok {
		s.mu.Unlock()
		return adkDetail(http.StatusNotFound, "Session not found: %s", r.Session)
	}
	// A text starts a new run; function responses go on with the paused
	// one.
	refuse := ss.mem.magic.refuse
	if len(r.message.texts) > 0 {
		refuse = parseMagic(strings.Join(r.message.texts, "\n")).refuse
	}
	if he := s.refuse(refuse, func() [sha256.Size]byte { return callKey(req, r) }); he != nil {
		s.mu.Unlock()
		return he
	}
	frames := s.planADK(ss, r.message)
	s.mu.Unlock()
	s.streamADK(req.Context(), w, frames, r.Streaming)
	return nil
}

// adkFrame is one frame of a /run_sse answer: an event, timestamped when
// it is written, or an error frame.
type adkFrame struct {
	pace     bool // pause ChunkDelay before it
	ev       *adkwire.Event
	errType  string
	errMsg   string
	isStream bool // a partial event, left out without streaming
}

// streamADK writes the frames as the server does: "data: <json>" and a
// blank line each, no event names, no end marker, then the body ends. A
// client that goes away stops it: the run is already recorded.
func (s *Simulator) streamADK(ctx context.Context, w http.ResponseWriter, frames []adkFrame, streaming bool) {
	rc, pace, err := s.openStream(w, false)
	if err != nil {
		return
	}
	for _, f := range frames {
		if f.isStream && !streaming {
			continue
		}
		if f.pace {
			if pace.pause(ctx, nil); ctx.Err() != nil {
				return
			}
		}
		var data []byte
		if f.ev != nil {
			f.ev.Timestamp = adkwire.Time(s.cfg.Now())
			data, _ = jsonw.Marshal(f.ev) // the wire types always encode
		} else {
			data = adkwire.ErrorFrame(f.errType, f.errMsg, s.cfg.Now())
		}
		if _, err := w.Write(adkwire.AppendFrame(make([]byte, 0, len(data)+8), data)); err != nil || flush(rc) != nil {
			return
		}
	}
}
