package adktest

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/brainwire/brainwire/adk/adkwire"
	"github.com/brainwire/brainwire/internal/jsonw"
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
	var chunks [][]adkwire.Part
	for _, th := range t.Thoughts {
		chunks = append(chunks, []adkwire.Part{{Text: th, Thought: true}})
	}
	for _, tx := range t.Texts {
		chunks = append(chunks, []adkwire.Part{{Text: tx}})
	}
	if len(t.Calls) > 0 {
		chunks = append(chunks, t.callParts())
	}
	out := make([]Frame, len(chunks))
	for i, parts := range chunks {
		ev := t.event(i, true, parts)
		if i == len(chunks)-1 {
			t.close(ev, true)
		} else if i == 0 && t.Usage != nil {
			ev.UsageMetadata = &adkwire.Usage{PromptTokenCount: t.Usage.Prompt, TotalTokenCount: t.Usage.Prompt}
		}
		out[i] = frame(ev)
	}
	return out
}

// Aggregated returns the event closing the model call: thoughts joined in
// one part, texts in another, the function calls, the usage.
func (t Turn) Aggregated() Frame {
	var parts []adkwire.Part
	if len(t.Thoughts) > 0 {
		parts = append(parts, adkwire.Part{Text: strings.Join(t.Thoughts, ""), Thought: true})
	}
	if len(t.Texts) > 0 {
		parts = append(parts, adkwire.Part{Text: strings.Join(t.Texts, "")})
	}
	parts = append(parts, t.callParts()...)
	n := len(t.Thoughts) + len(t.Texts)
	if len(t.Calls) > 0 {
		n++
	}
	ev := t.event(n, false, parts)
	t.close(ev, false)
	if t.ErrorCode != "" {
		ev.ErrorCode, ev.ErrorMessage = t.ErrorCode, t.ErrorMessage
	}
	return frame(ev)
}

func (t Turn) callParts() []adkwire.Part {
	var parts []adkwire.Part
	for _, c := range t.Calls {
		args := json.RawMessage(`{}`)
		switch a := c.Args.(type) {
		case string:
			args = json.RawMessage(a)
		case nil:
		default:
			args = json.RawMessage(Encode(a))
		}
		parts = append(parts, adkwire.Part{FunctionCall: &adkwire.FunctionCall{ID: c.ID, Args: args, Name: c.Name}, ThoughtSignature: thoughtSignature})
	}
	return parts
}

// event is the i-th event of the turn, before its closing members.
func (t Turn) event(i int, partial bool, parts []adkwire.Part) *adkwire.Event {
	author := t.Author
	if author == "" {
		author = Author
	}
	ts := t.Timestamp
	if ts == 0 {
		ts = 1784000001.1
	}
	return &adkwire.Event{
		ModelVersion: Model,
		Content:      &adkwire.Content{Parts: parts, Role: "model"},
		Partial:      &partial,
		InvocationID: t.InvocationID,
		Author:       author,
		NodeInfo:     adkwire.Node{Path: author + "@1"},
		ID:           t.EventID,
		Timestamp:    seconds(ts + 0.01*float64(i)),
	}
}

// close gives ev, the event that closes the model call (the last partial
// or the aggregated one), its finish reason, usage and long-running ids.
func (t Turn) close(ev *adkwire.Event, partial bool) {
	ev.FinishReason = "STOP"
	if t.ErrorCode != "" {
		ev.FinishReason = t.ErrorCode
	}
	if t.Usage != nil {
		ev.UsageMetadata = &adkwire.Usage{CandidatesTokenCount: t.Usage.Candidates, PromptTokenCount: t.Usage.Prompt,
			ThoughtsTokenCount: t.Usage.Thoughts, TotalTokenCount: t.Usage.Total}
	}
	if len(t.Calls) > 0 {
		ev.LongRunningToolIDs = []string{}
		if !t.AgentRuns {
			for _, c := range t.Calls {
				ev.LongRunningToolIDs = append(ev.LongRunningToolIDs, c.ID)
			}
		}
	}
}

// seconds is a time given in seconds since the epoch.
func seconds(s float64) adkwire.Time {
	return adkwire.Time(time.UnixMicro(int64(math.Round(s * 1e6))))
}

func frame(v any) Frame {
	data, err := jsonw.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("adktest: %v", err))
	}
	return Frame{Data: string(data)}
}

// FunctionResponseEvent is the event the agent emits after running a tool
// itself: the response, authored by the agent with the role user.
func FunctionResponseEvent(invocationID, eventID, id, name string, response any) Frame {
	return frame(adkwire.Event{
		Content:      &adkwire.Content{Parts: []adkwire.Part{{FunctionResponse: &adkwire.FunctionResponse{ID: id, Name: name, Response: response}}}, Role: "user"},
		InvocationID: invocationID,
		Author:       Author,
		NodeInfo:     adkwire.Node{Path: Author + "@1"},
		ID:           eventID,
		Timestamp:    seconds(1784000001.5),
	})
}

// ErrorFrame is the frame the API server (2.4 and later) writes when an
// exception ends the run after the stream started: written by Python's
// json.dumps, so with spaces after separators and non-ASCII escaped.
func ErrorFrame(errorType, message string) Frame {
	return Frame{Data: string(adkwire.ErrorFrame(errorType, message, time.Time(seconds(1784000002.4))))}
}

// LegacyErrorFrame is the error frame of API servers before 1.23, which
// put the message in unescaped: quotes or newlines in it make it invalid
// JSON (and a newline ends the data line early).
func LegacyErrorFrame(message string) Frame {
	return scripttest.OneLine(`{"error": "` + message + `"}`)
}

// Session is the API server's answer to a session creation, or to a
// session's GET (GET /apps/{app}/users/{user}/sessions/{id}) with the
// events it holds, oldest first.
func Session(id, app, user string, events ...adkwire.Event) adkwire.Session {
	if events == nil {
		events = []adkwire.Event{}
	}
	return adkwire.Session{ID: id, AppName: app, UserID: user, State: json.RawMessage(`{}`), Events: events,
		LastUpdateTime: seconds(1784000000.25)}
}

// UserEvent is the event the server appends for a /run_sse call's
// message from the user (author "user"), as a session's GET lists it.
func UserEvent(invocationID, eventID, text string) adkwire.Event {
	return adkwire.Event{
		Content:      &adkwire.Content{Parts: []adkwire.Part{{Text: text}}, Role: "user"},
		InvocationID: invocationID,
		Author:       "user",
		ID:           eventID,
		Timestamp:    seconds(1784000001.0),
	}
}

// Encode returns v as one line of compact JSON, non-ASCII kept as UTF-8,
// as pydantic writes events.
func Encode(v any) string { return scripttest.Encode(v) }
