package adktest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/brainwire/brainwire/internal/scripttest"
)

// Model is the model version the builders report.
const Model = "gemini-2.5-flash"

// Author is the agent name the builders use when a Turn names none.
const Author = "classifier"

// thoughtSignature stands for the opaque signature Gemini puts on
// function-call parts (URL-safe base64 on the wire).
const thoughtSignature = "CiQB0e2Kb3Q-_sig_AQ=="

// Turn is one model call of an agent run, as the API server streams it
// with progressive streaming (ADK 1.22 and later, the default): one
// partial event per thought or text chunk, a partial event with the
// function calls, then the aggregated event repeating all of it.
type Turn struct {
	InvocationID string
	// EventID is shared by the partial events and the aggregated one, as
	// since ADK 2.6.
	EventID string
	// Author is the agent; Author when empty.
	Author   string
	Thoughts []string
	Texts    []string
	Calls    []FunctionCall
	// AgentRuns marks Calls as tools the agent runs itself; otherwise
	// they are long-running: handed to the client, pausing the run.
	AgentRuns bool
	Usage     *Usage
	// ErrorCode and ErrorMessage make the aggregated event a failed model
	// call (finish reason SAFETY, MAX_TOKENS, ...).
	ErrorCode    string
	ErrorMessage string
	// Timestamp is the first event's, in seconds; later ones add 0.01.
	Timestamp float64
}

// FunctionCall is a function call part.
type FunctionCall struct {
	ID   string
	Name string
	// Args is encoded as JSON; a string is taken as ready JSON.
	Args any
}

// Usage is a usageMetadata.
type Usage struct {
	Prompt, Candidates, Thoughts, Total int64
}

// Frames returns the turn's partial events and then its aggregated event.
func (t Turn) Frames() []Frame { return append(t.Partials(), t.Aggregated()) }

// Partials returns the turn's partial events. The first carries the
// prompt's usage and the last the finish reason and the whole usage, as
// Gemini's chunks do.
func (t Turn) Partials() []Frame {
	type chunk struct {
		parts   []any
		usage   *Usage
		closing bool
	}
	var chunks []chunk
	for _, th := range t.Thoughts {
		chunks = append(chunks, chunk{parts: []any{Object{{"text", th}, {"thought", true}}}})
	}
	for _, tx := range t.Texts {
		chunks = append(chunks, chunk{parts: []any{Object{{"text", tx}}}})
	}
	if len(t.Calls) > 0 {
		chunks = append(chunks, chunk{parts: t.callParts()})
	}
	if n := len(chunks); n > 0 {
		chunks[n-1].usage, chunks[n-1].closing = t.Usage, true
		if n > 1 && t.Usage != nil {
			chunks[0].usage = &Usage{Prompt: t.Usage.Prompt, Total: t.Usage.Prompt}
		}
	}
	out := make([]Frame, len(chunks))
	for i, c := range chunks {
		out[i] = Frame{Data: Encode(t.frameFields(i, true, c.parts, c.usage, c.closing))}
	}
	return out
}

// Aggregated returns the event closing the model call: thoughts joined in
// one part, texts in another, the function calls, the usage.
func (t Turn) Aggregated() Frame {
	var parts []any
	if len(t.Thoughts) > 0 {
		parts = append(parts, Object{{"text", strings.Join(t.Thoughts, "")}, {"thought", true}})
	}
	if len(t.Texts) > 0 {
		parts = append(parts, Object{{"text", strings.Join(t.Texts, "")}})
	}
	parts = append(parts, t.callParts()...)
	n := len(t.Thoughts) + len(t.Texts)
	if len(t.Calls) > 0 {
		n++
	}
	return Frame{Data: Encode(t.frameFields(n, false, parts, t.Usage, true))}
}

func (t Turn) callParts() []any {
	var parts []any
	for _, c := range t.Calls {
		parts = append(parts, Object{
			{"functionCall", Object{{"id", c.ID}, {"args", rawArgs(c.Args)}, {"name", c.Name}}},
			{"thoughtSignature", thoughtSignature},
		})
	}
	return parts
}

func rawArgs(a any) any {
	if s, ok := a.(string); ok {
		return json.RawMessage(s)
	}
	if a == nil {
		return Object{}
	}
	return a
}

// frameFields builds the i-th event of the turn in the server's member
// order: the model response's fields, then the event's.
func (t Turn) frameFields(i int, partial bool, parts []any, u *Usage, closing bool) Object {
	author := t.Author
	if author == "" {
		author = Author
	}
	o := Object{
		{"modelVersion", Model},
		{"content", Object{{"parts", parts}, {"role", "model"}}},
		{"partial", partial},
	}
	if closing {
		reason := "STOP"
		if t.ErrorCode != "" {
			reason = t.ErrorCode
		}
		o = append(o, Field{"finishReason", reason})
		if t.ErrorCode != "" && !partial {
			o = append(o, Field{"errorCode", t.ErrorCode}, Field{"errorMessage", t.ErrorMessage})
		}
	}
	if u != nil {
		o = append(o, Field{"usageMetadata", u.object()})
	}
	o = append(o,
		Field{"invocationId", t.InvocationID},
		Field{"author", author},
		Field{"actions", EmptyActions()},
		Field{"nodeInfo", Object{{"path", author + "@1"}}},
	)
	if len(t.Calls) > 0 && closing {
		ids := []string{}
		if !t.AgentRuns {
			for _, c := range t.Calls {
				ids = append(ids, c.ID)
			}
		}
		o = append(o, Field{"longRunningToolIds", ids})
	}
	ts := t.Timestamp
	if ts == 0 {
		ts = 1784000001.1
	}
	return append(o, Field{"id", t.EventID}, Field{"timestamp", json.Number(strconv.FormatFloat(ts+0.01*float64(i), 'f', -1, 64))})
}

func (u *Usage) object() Object {
	o := Object{}
	if u.Candidates > 0 {
		o = append(o, Field{"candidatesTokenCount", u.Candidates})
	}
	o = append(o, Field{"promptTokenCount", u.Prompt})
	if u.Thoughts > 0 {
		o = append(o, Field{"thoughtsTokenCount", u.Thoughts})
	}
	return append(o, Field{"totalTokenCount", u.Total})
}

// EmptyActions is the actions member every event carries.
func EmptyActions() Object {
	return Object{{"stateDelta", Object{}}, {"artifactDelta", Object{}}, {"requestedAuthConfigs", Object{}}, {"requestedToolConfirmations", Object{}}}
}

// FunctionResponseEvent is the event the agent emits after running a tool
// itself: the response, authored by the agent with the role user.
func FunctionResponseEvent(invocationID, eventID, id, name string, response any) Frame {
	return Frame{Data: Encode(Object{
		{"content", Object{{"parts", []any{Object{{"functionResponse", Object{{"id", id}, {"name", name}, {"response", response}}}}}}, {"role", "user"}}},
		{"invocationId", invocationID},
		{"author", Author},
		{"actions", EmptyActions()},
		{"nodeInfo", Object{{"path", Author + "@1"}}},
		{"id", eventID},
		{"timestamp", json.Number("1784000001.5")},
	})}
}

// ErrorFrame is the frame the API server (2.4 and later) writes when an
// exception ends the run after the stream started: written by Python's
// json.dumps, so with spaces after separators and non-ASCII escaped.
func ErrorFrame(errorType, message string) Frame {
	return Frame{Data: fmt.Sprintf(`{"error": %s, "error_details": {"error_type": %s, "error_message": %s, "timestamp": 1784000002.4}}`,
		PyString(errorType+": "+message), PyString(errorType), PyString(message))}
}

// LegacyErrorFrame is the error frame of API servers before 1.23, which
// put the message in unescaped: quotes or newlines in it make it invalid
// JSON (and a newline ends the data line early).
func LegacyErrorFrame(message string) Frame {
	return scripttest.OneLine(`{"error": "` + message + `"}`)
}

// PyString encodes s as Python's json.dumps does by default: ASCII only.
func PyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Session is the API server's answer to a session creation.
func Session(id, app, user string) Object {
	return Object{{"id", id}, {"appName", app}, {"userId", user}, {"state", Object{}}, {"events", []any{}},
		{"lastUpdateTime", json.Number("1784000000.25")}}
}

// Object is a JSON object that keeps its members in order, so payloads
// read like the server's.
type Object []Field

// Field is one member of an Object.
type Field struct {
	Key   string
	Value any
}

// MarshalJSON implements json.Marshaler, without HTML escaping.
func (o Object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, scripttest.Encode(f.Key)...), ':')
		b = append(b, scripttest.Encode(f.Value)...)
	}
	return append(b, '}'), nil
}

// Encode returns v as one line of compact JSON, non-ASCII kept as UTF-8,
// as pydantic writes events.
func Encode(v any) string { return scripttest.Encode(v) }
