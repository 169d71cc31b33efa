// Package floor is the least a capture server can do for the load tool's
// traffic: Go's net/http server and the production HTTP client, speaking
// exactly the wire protocols brainwire speaks, with none of its logic. No
// store, no telemetry, no logging, no adapter: it frames the agent
// service's event stream (brainwire's sse.Reader) but decodes only the one
// or two events that carry the tool calls.
//
// Measured with the load tool (brainwire-load -floor), it is the floor
// under brainwire's own figures: what any server costs per capture for
// the same connections, requests and bytes, so that what brainwire adds
// shows as the difference.
//
// Per capture it answers the phone as serve does on capture-v2
// (STEP_START at once; STEP_END and the outcome right after filing;
// COMPLETE when the run ends; ERROR then COMPLETE when the run fails) and
// makes the calls upstream that serve makes against the simulator:
//
//   - threads: POST /threads/runs, streamed, with the message and the
//     file_capture tool; at thread.run.requires_action, the tool outputs
//     (POST .../submit_tool_outputs, streamed) until thread.run.completed.
//   - responses: POST /conversations, then POST /responses, streamed, with
//     the model, the built-in instructions, the tool, reasoning summaries
//     and the message; for each function call in it, a
//     function_call_output in a second response on the conversation,
//     read to response.completed.
//
// The request bodies are those serve sends by default: the same tool
// definition and, on the responses face, the built-in instructions and
// reasoning summary "auto" (serve's BRAINWIRE_INSTRUCTIONS,
// BRAINWIRE_REASONING_SUMMARY and BRAINWIRE_RESPONSES_CHAINING are not
// followed). "Filing" is an item id and the tool output serve would
// return for it. Unlike serve, a phone that hangs up only aborts the
// calls in flight: no run is cancelled upstream.
package floor

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/brainwire/brainwire/bench/load"
	"github.com/google/uuid"
)

// Config says what a Handler serves and where it calls.
type Config struct {
	// Upstream is the simulator's base URL (http://host:port); the
	// operation paths go under its project (simulator.ProjectPath).
	Upstream string
	// Face is the simulator face to speak: load.FaceThreads or
	// load.FaceResponses.
	Face string
	// Key is the API key phones must send (Authorization: Bearer).
	Key string
	// Token is the bearer token sent upstream (any, for the simulator).
	Token string
	// Client makes the upstream calls: give it the transport serve uses
	// (agenthttp.Upstream.Transport), for the same connections. Nil means
	// http.DefaultClient.
	Client *http.Client
}

// HealthPath answers 200 (GET), for readiness checks.
const HealthPath = "/health"

// maxBodyBytes bounds a capture's request body, as serve's default does.
const maxBodyBytes = 64 << 10

// Handler is the floor server's http.Handler.
type Handler struct {
	key  []byte
	face face
	mux  *http.ServeMux
}

// face runs one capture's conversation with the agent service, start to
// end, filing through c.
type face interface {
	converse(ctx context.Context, c *capture) error
}

// New returns the handler cfg describes; only the threads and responses
// faces are spoken.
func New(cfg Config) (*Handler, error) {
	if cfg.Key == "" {
		return nil, errors.New("floor: an API key is required")
	}
	if cfg.Token == "" {
		return nil, errors.New("floor: an upstream token is required")
	}
	if !strings.HasPrefix(cfg.Upstream, "http://") && !strings.HasPrefix(cfg.Upstream, "https://") {
		return nil, fmt.Errorf("floor: upstream %q: want the simulator's http:// base URL", cfg.Upstream)
	}
	up := &upstream{client: cfg.Client, auth: "Bearer " + cfg.Token}
	if up.client == nil {
		up.client = http.DefaultClient
	}
	base := strings.TrimRight(cfg.Upstream, "/")
	h := &Handler{key: []byte(cfg.Key), mux: http.NewServeMux()}
	var err error
	switch cfg.Face {
	case load.FaceThreads:
		h.face, err = newThreads(up, base)
	case load.FaceResponses:
		h.face, err = newResponses(up, base)
	default:
		return nil, fmt.Errorf("floor: face %q is not spoken here: use %s or %s", cfg.Face, load.FaceThreads, load.FaceResponses)
	}
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	h.mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, `{"status":"ok"}`)
	})
	h.mux.HandleFunc("POST "+load.DefaultPath, h.capture)
	return h, nil
}

// ServeHTTP serves GET /health and POST /api/capture.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// capture answers one capture: checks, then the event stream, to COMPLETE.
func (h *Handler) capture(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(key), h.key) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="brainwire"`)
		writeJSON(w, http.StatusUnauthorized, `{"detail":"Invalid or missing API key"}`)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeJSON(w, http.StatusRequestEntityTooLarge, `{"detail":"request body is too large"}`)
			return
		}
		writeJSON(w, http.StatusBadRequest, `{"detail":"the request body could not be read"}`)
		return
	}
	var req struct {
		Text     string `json:"text"`
		ThreadID string `json:"thread_id"`
		RunID    string `json:"run_id"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, `{"detail":"malformed JSON body"}`)
		return
	}
	text := strings.TrimSpace(req.Text)
	if text == "" {
		writeJSON(w, http.StatusBadRequest, `{"detail":"text is required"}`)
		return
	}
	c := &capture{w: w, rc: http.NewResponseController(w), text: text, threadID: req.ThreadID, runID: req.RunID}
	if c.threadID == "" {
		c.threadID = "thread-" + uuid.NewString()
	}
	if c.runID == "" {
		c.runID = "run-" + uuid.NewString()
	}
	c.start()
	// The request's context: a phone that hangs up aborts the calls
	// upstream.
	c.end(h.face.converse(r.Context(), c))
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// Frames that never change.
const (
	stepStart = "data: {\"type\":\"STEP_START\",\"stepName\":\"Classifying\"}\n\n"
	stepEnd   = "data: {\"type\":\"STEP_END\",\"stepName\":\"Classifying\"}\n\n"
)

// capture is one capture's stream to its phone, and what was filed.
type capture struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	text string
	// threadID and runID are the phone's, echoed in COMPLETE.
	threadID, runID string
	// itemID is the filed item's id once a file_capture call filed it;
	// outcome says its event went to the phone.
	itemID  string
	outcome bool
	frame   []byte
	werr    error // the first failed write: the phone is gone
}

// start sends the headers serve sends and STEP_START, before anything
// is asked upstream.
func (c *capture) start() {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	c.w.WriteHeader(http.StatusOK)
	c.frame = append(c.frame[:0], stepStart...)
	_ = c.send()
}

// send writes the pending frames and flushes them, as one write, as serve
// writes the events of one step.
func (c *capture) send() error {
	if c.werr != nil {
		return c.werr
	}
	_, err := c.w.Write(c.frame)
	if err == nil {
		err = c.rc.Flush()
	}
	c.frame = c.frame[:0]
	if err != nil {
		c.werr = fmt.Errorf("writing to the phone: %w", err)
	}
	return c.werr
}

// end ends the stream: UNRESOLVED when the run ended without filing,
// ERROR when it failed before the outcome, then COMPLETE, in one write
// as serve writes them. ERROR's code is always upstream: the floor tells
// no causes apart.
func (c *capture) end(err error) {
	if c.werr != nil {
		return
	}
	switch {
	case !c.outcome && err != nil:
		c.event(map[string]any{"type": "ERROR", "message": err.Error(), "code": "upstream"})
	case !c.outcome:
		c.frame = append(c.frame, stepEnd...)
		c.event(map[string]any{"type": "UNRESOLVED", "value": map[string]string{"inboxItemId": ""}})
	}
	c.event(map[string]any{"type": "COMPLETE", "threadId": c.threadID, "runId": c.runID})
	_ = c.send()
}

// event adds an event with v as its data to the pending frames.
func (c *capture) event(v any) {
	c.frame = append(append(append(c.frame, "data: "...), jsonText(v)...), "\n\n"...)
}

// jsonText is v in JSON as serve writes it, HTML characters as they are.
// The floor's values (strings, numbers read from JSON) always encode.
func jsonText(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// toolCall is a function call the agent asked for.
type toolCall struct {
	ID, Name, Arguments string
}

// fileCapture is the one tool a text capture offers.
const fileCapture = "file_capture"

// file answers the agent's calls as serve's tools would: the first
// file_capture call files the capture (its outcome goes to the phone at
// once), later ones are told it is filed. upstreamThread is the agent
// service's thread or conversation, for a misunderstood capture's
// follow-up. It returns one output per call.
func (c *capture) file(calls []toolCall, upstreamThread string) ([]string, error) {
	outputs := make([]string, len(calls))
	for i, call := range calls {
		var out []byte
		switch {
		case call.Name != fileCapture:
			out = jsonText(map[string]string{"error": "unknown_tool", "message": "no tool named " + call.Name})
		case c.itemID != "":
			out = jsonText(map[string]string{"error": "already_filed", "message": "this capture was already filed as item " + c.itemID})
		default:
			var err error
			if out, err = c.fileOne(call, upstreamThread); err != nil {
				return nil, err
			}
		}
		outputs[i] = string(out)
	}
	return outputs, nil
}

// fileOne files the capture and sends its outcome.
func (c *capture) fileOne(call toolCall, upstreamThread string) ([]byte, error) {
	var a struct {
		Bucket     string  `json:"bucket"`
		Confidence float64 `json:"confidence"`
		Status     string  `json:"status"`
		Question   string  `json:"question"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
		return []byte(`{"error":"invalid_arguments","message":"arguments are not a JSON object"}`), nil
	}
	var typ string
	switch a.Status {
	case "classified":
		typ = "CLASSIFIED"
	case "pending":
		typ = "LOW_CONFIDENCE"
	case "misunderstood":
		typ = "MISUNDERSTOOD"
	default:
		return []byte(`{"error":"invalid_status","message":"unknown status"}`), nil
	}
	c.itemID = uuid.NewString()
	out := jsonText(map[string]any{"bucket": a.Bucket, "confidence": a.Confidence, "item_id": c.itemID, "status": a.Status})
	value := map[string]any{"inboxItemId": c.itemID, "bucket": a.Bucket, "confidence": a.Confidence}
	if typ == "MISUNDERSTOOD" {
		value = map[string]any{"threadId": c.threadID, "inboxItemId": c.itemID, "questionText": a.Question,
			"foundryConversationId": upstreamThread}
	}
	c.frame = append(c.frame, stepEnd...)
	c.event(map[string]any{"type": typ, "value": value})
	c.outcome = true
	return out, c.send()
}
