package recorder

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
)

// Version is the fixture format this package writes and reads. A change
// that old readers would misread bumps it.
const Version = 1

// Fixture is one recorded capture run: what the phone asked, every HTTP
// exchange with the agent service in order, and the tools the server ran.
// See fixtures/README.md for the file format.
type Fixture struct {
	Version     int    `json:"version"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// RecordedAt is when the capture started, to the second.
	RecordedAt time.Time `json:"recorded_at"`
	// Upstream says what answered: "simulator", "foundry", ...
	Upstream string `json:"upstream,omitempty"`
	// Retries is how many times the server sent a refused call again; a
	// recording without it (made before calls were sent again) made none.
	// Each attempt is an exchange.
	Retries   int        `json:"retries,omitempty"`
	Capture   Capture    `json:"capture"`
	Exchanges []Exchange `json:"exchanges"`
	Tools     []ToolRun  `json:"tools,omitempty"`
	Result    Result     `json:"result"`
}

// Capture is the capture as the phone sent it.
type Capture struct {
	Kind brainwire.CaptureKind `json:"kind"`
	// Text is the typed text, or the answer of a follow-up.
	Text string `json:"text,omitempty"`
	// ThreadID and RunID are the capture's ids as the server used them.
	ThreadID string `json:"thread_id,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	// UpstreamThreadID is the agent thread a follow-up continued.
	UpstreamThreadID string    `json:"upstream_thread_id,omitempty"`
	Audio            *Audio    `json:"audio,omitempty"`
	FollowUp         *FollowUp `json:"follow_up,omitempty"`
}

// Audio describes a voice upload. The bytes are not kept: replay takes the
// transcript from the recorded transcribe_audio result.
type Audio struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type,omitempty"`
	Size        int64  `json:"size,omitempty"`
}

// FollowUp is what a follow-up capture answered.
type FollowUp struct {
	// Round is follow_up_round; 0 when the recording could not tell (1 is used).
	Round int `json:"round"`
	// Item is the misunderstood inbox item the follow-up files onto; replay
	// puts it in the store before the capture.
	Item InboxSeed `json:"item"`
}

// InboxSeed is an inbox item that exists before the capture runs.
type InboxSeed struct {
	ID               string                `json:"id"`
	RawText          string                `json:"raw_text,omitempty"`
	Title            string                `json:"title,omitempty"`
	Source           brainwire.CaptureKind `json:"source,omitempty"`
	Bucket           string                `json:"bucket,omitempty"`
	Confidence       float64               `json:"confidence,omitempty"`
	UpstreamThreadID string                `json:"foundry_thread_id"`
}

// Exchange is one HTTP request to the agent service and what came back.
type Exchange struct {
	// AtMs is when the request was sent, in ms since the capture started.
	AtMs     int64     `json:"at_ms"`
	Request  Request   `json:"request"`
	Response *Response `json:"response,omitempty"`
	// Error is the transport failure when no response came.
	Error string `json:"error,omitempty"`
}

// Request is a recorded request.
type Request struct {
	Method string            `json:"method"`
	Path   string            `json:"path"`
	Query  map[string]string `json:"query,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	// Body is the JSON body; BodyText holds a body that is not JSON.
	Body     json.RawMessage `json:"body,omitempty"`
	BodyText string          `json:"body_text,omitempty"`
}

// Response is a recorded response. A streamed response has Events; any
// other has Body or BodyText.
type Response struct {
	// Ms is when the status line arrived, in ms since the request was sent.
	Ms     int64             `json:"ms"`
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Events []Event           `json:"events,omitempty"`
	// Body is a JSON body; BodyText holds a body that is not JSON.
	Body     json.RawMessage `json:"body,omitempty"`
	BodyText string          `json:"body_text,omitempty"`
	// Partial holds the bytes after the last complete event when the
	// body ended (a stream cut mid-event, or a last event without its
	// blank line); PartialBase64 when they are not valid UTF-8.
	Partial       string `json:"partial,omitempty"`
	PartialBase64 string `json:"partial_base64,omitempty"`
	// EndMs is when the body ended, in ms since the request was sent.
	EndMs int64 `json:"end_ms"`
	// Error is the read error that ended the body (a cut connection).
	Error string `json:"error,omitempty"`
	// Closed means the client closed the body before its end.
	Closed bool `json:"closed,omitempty"`
	// SplitAt lists byte offsets of the streamed body at which replay
	// splits its writes, to exercise a reader's handling of events, lines
	// and UTF-8 characters arriving in pieces. Not set by recording.
	SplitAt []int `json:"split_at,omitempty"`
}

// Event is one server-sent event as it arrived.
type Event struct {
	// Ms is when the event was complete, in ms since the request was sent.
	Ms   int64  `json:"ms"`
	Name string `json:"event,omitempty"`
	// Data is the data string when it is one line of compact JSON, kept
	// byte for byte; otherwise DataText (or DataBase64 when not UTF-8).
	Data       json.RawMessage `json:"data,omitempty"`
	DataText   string          `json:"data_text,omitempty"`
	DataBase64 string          `json:"data_base64,omitempty"`
}

// ToolRun is one tool call the server ran for the agent.
type ToolRun struct {
	// Round counts the run's requires_action pauses, from 1.
	Round         int             `json:"round"`
	CallID        string          `json:"call_id"`
	Name          string          `json:"name"`
	Arguments     json.RawMessage `json:"arguments,omitempty"`
	ArgumentsText string          `json:"arguments_text,omitempty"`
	Output        json.RawMessage `json:"output,omitempty"`
	OutputText    string          `json:"output_text,omitempty"`
	IsError       bool            `json:"is_error,omitempty"`
}

// Result is how the capture ended, as the server saw it.
type Result struct {
	// Outcome is the outcome event sent to the phone (CLASSIFIED, ...),
	// ERROR, or empty.
	Outcome         string `json:"outcome,omitempty"`
	ReasoningChunks int    `json:"reasoning_chunks"`
	// Error is the run's error, if any.
	Error string `json:"error,omitempty"`
}

// NewEvent returns an event holding data in the most readable exact form.
func NewEvent(ms int64, name string, data []byte) Event {
	ev := Event{Ms: ms, Name: name}
	switch {
	case isVerbatimJSON(data):
		ev.Data = json.RawMessage(bytes.Clone(data))
	case utf8.Valid(data):
		ev.DataText = string(data)
	default:
		ev.DataBase64 = base64.StdEncoding.EncodeToString(data)
	}
	return ev
}

// Payload returns the event's data string, byte for byte.
func (e Event) Payload() []byte {
	switch {
	case len(e.Data) > 0:
		return e.Data
	case e.DataBase64 != "":
		b, err := base64.StdEncoding.DecodeString(e.DataBase64)
		if err != nil {
			return nil
		}
		return b
	}
	return []byte(e.DataText)
}

// AppendWire appends the event as the service frames it on the wire:
// an event line, one data line per line of data, and a blank line.
func (e Event) AppendWire(dst []byte) []byte {
	if e.Name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, e.Name...)
		dst = append(dst, '\n')
	}
	data := e.Payload()
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		dst = append(dst, "data: "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
		if !more {
			break
		}
		data = rest
	}
	return append(dst, '\n')
}

// IsStream reports whether the response is a server-sent event stream.
func (r *Response) IsStream() bool {
	if len(r.Events) > 0 {
		return true
	}
	ct, _, _ := strings.Cut(r.Header["Content-Type"], ";")
	return strings.TrimSpace(strings.ToLower(ct)) == "text/event-stream"
}

// PartialBytes returns the trailing bytes of a stream that ended mid-event.
func (r *Response) PartialBytes() []byte {
	if r.PartialBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(r.PartialBase64)
		if err == nil {
			return b
		}
	}
	return []byte(r.Partial)
}

// BodyBytes returns the body of a response that is not a stream.
func (r *Response) BodyBytes() []byte {
	if len(r.Body) > 0 {
		return r.Body
	}
	return []byte(r.BodyText)
}

func (r *Response) setPartial(b []byte) {
	if utf8.Valid(b) {
		r.Partial = string(b)
		return
	}
	r.PartialBase64 = base64.StdEncoding.EncodeToString(b)
}

// BodyBytes returns the request body.
func (r *Request) BodyBytes() []byte {
	if len(r.Body) > 0 {
		return r.Body
	}
	return []byte(r.BodyText)
}

// isVerbatimJSON reports whether b can sit in the file as a JSON value and
// come back byte for byte: valid, UTF-8, already compact, on one line.
func isVerbatimJSON(b []byte) bool {
	if len(b) == 0 || !utf8.Valid(b) || !json.Valid(b) {
		return false
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return false
	}
	return bytes.Equal(c.Bytes(), b)
}

// jsonOrText splits a body into a JSON value or, when it is not JSON, text.
func jsonOrText(b []byte) (json.RawMessage, string) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, ""
	}
	if json.Valid(b) && utf8.Valid(b) {
		var c bytes.Buffer
		if err := json.Compact(&c, b); err == nil {
			return c.Bytes(), ""
		}
	}
	return nil, strings.ToValidUTF8(string(b), "\uFFFD")
}

// Marshal encodes a fixture as the file holds it: JSON indented by two
// spaces, no HTML escaping, and a final newline, except that each element
// of an "events" array (one SSE event, its data byte for byte) and the
// value of "split_at" stay on one line, so that a diff reads event by event.
func Marshal(fx *Fixture) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(fx); err != nil {
		return nil, fmt.Errorf("encoding fixture: %w", err)
	}
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	out := make([]byte, 0, buf.Len())
	for i := 0; i < len(lines); i++ {
		line := bytes.TrimSpace(lines[i])
		switch {
		case bytes.HasPrefix(line, []byte(`"split_at": `)):
			out, i = oneLine(out, lines, i, indentOf(lines[i])+len(`"split_at": `))
		case bytes.HasPrefix(line, []byte(`"events": [`)) && bytes.HasSuffix(line, []byte("[")):
			out = append(out, lines[i]...)
			for d := indentOf(lines[i]); indentOf(lines[i+1]) > d; {
				out, i = oneLine(out, lines, i+1, indentOf(lines[i+1]))
			}
		default:
			out = append(out, lines[i]...)
		}
	}
	return out, nil
}

// oneLine appends lines[i][:head] and then the value that starts after it
// compacted onto one line, and returns the index of the value's last line.
// The lines are the encoder's: strings hold no newline, and a value that
// spreads over lines closes on the first line back at its indentation.
func oneLine(out []byte, lines [][]byte, i, head int) ([]byte, int) {
	first, d := lines[i], indentOf(lines[i])
	j := i
	if c := bytes.TrimSpace(first); c[len(c)-1] == '[' || c[len(c)-1] == '{' {
		for j = i + 1; indentOf(lines[j]) != d; j++ {
		}
	}
	val := bytes.TrimSpace(bytes.Join(append([][]byte{first[head:]}, lines[i+1:j+1]...), nil))
	comma := bytes.HasSuffix(val, []byte(","))
	var b bytes.Buffer
	json.Compact(&b, bytes.TrimSuffix(val, []byte(","))) // the encoder's output is valid
	out = append(append(out, first[:head]...), b.Bytes()...)
	if comma {
		out = append(out, ',')
	}
	return append(out, '\n'), j
}

func indentOf(line []byte) int { return len(line) - len(bytes.TrimLeft(line, " ")) }

// Unmarshal decodes a fixture file. Unknown fields are an error, so a typo
// in a hand-edited fixture does not silently change what it tests.
func Unmarshal(b []byte) (*Fixture, error) {
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("decoding fixture: %w", err)
	}
	if probe.Version != Version {
		return nil, fmt.Errorf("fixture format version %d is not supported (this build reads version %d)", probe.Version, Version)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	fx := &Fixture{}
	if err := dec.Decode(fx); err != nil {
		return nil, fmt.Errorf("decoding fixture: %w", err)
	}
	// Bodies are indented in the file; event data is kept as written.
	for i := range fx.Exchanges {
		ex := &fx.Exchanges[i]
		ex.Request.Body = compact(ex.Request.Body)
		if ex.Response != nil {
			// Replay answers with it: HTTP has three digits for a status.
			if s := ex.Response.Status; s < 100 || s > 999 {
				return nil, fmt.Errorf("decoding fixture: exchange %d: response status %d is not an HTTP status", i+1, s)
			}
			ex.Response.Body = compact(ex.Response.Body)
		}
	}
	for i := range fx.Tools {
		fx.Tools[i].Arguments = compact(fx.Tools[i].Arguments)
		fx.Tools[i].Output = compact(fx.Tools[i].Output)
	}
	return fx, nil
}

func compact(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return v
	}
	var c bytes.Buffer
	if err := json.Compact(&c, v); err != nil {
		return v
	}
	return c.Bytes()
}

// Load reads a fixture file.
func Load(path string) (*Fixture, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading fixture: %w", err)
	}
	fx, err := Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return fx, nil
}

// WriteFile writes a fixture atomically.
func WriteFile(path string, fx *Fixture) error {
	b, err := Marshal(fx)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b)
}

// WriteFileAtomic writes data to a temporary file in path's directory and
// renames it over path, so readers see the old file or the whole new one,
// never a half-written one.
func WriteFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
