package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The Responses API's wire shapes, field order as the API writes them.

type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Background         bool              `json:"background"`
	CompletedAt        *int64            `json:"completed_at"`
	Error              *lastError        `json:"error"`
	IncompleteDetails  *incompleteObject `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []json.RawMessage `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          reasoningObject   `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        jsonFloat         `json:"temperature"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	TopP               jsonFloat         `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *responseUsage    `json:"usage"`
	User               *string           `json:"user"`
	Metadata           json.RawMessage   `json:"metadata"`
	Conversation       *conversationRef  `json:"conversation,omitempty"`
	AgentReference     *agentRef         `json:"agent_reference,omitempty"`
}

type reasoningObject struct {
	Effort  string  `json:"effort"`
	Summary *string `json:"summary"`
}

type incompleteObject struct {
	Reason string `json:"reason"`
}

type conversationRef struct {
	ID string `json:"id"`
}

type responseUsage struct {
	InputTokens         int64        `json:"input_tokens"`
	InputTokensDetails  cachedTokens `json:"input_tokens_details"`
	OutputTokens        int64        `json:"output_tokens"`
	OutputTokensDetails reasonTokens `json:"output_tokens_details"`
	TotalTokens         int64        `json:"total_tokens"`
}

type cachedTokens struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type reasonTokens struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

type conversationObject struct {
	ID        string          `json:"id"`
	Object    string          `json:"object"`
	CreatedAt int64           `json:"created_at"`
	Metadata  json.RawMessage `json:"metadata"`
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type agentObject struct {
	Object   string        `json:"object"`
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Versions agentVersions `json:"versions"`
}

type agentVersions struct {
	Latest agentVersionObject `json:"latest"`
}

type agentVersionObject struct {
	Metadata    json.RawMessage `json:"metadata"`
	Object      string          `json:"object"`
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Version     string          `json:"version"`
	Description string          `json:"description"`
	CreatedAt   int64           `json:"created_at"`
	Definition  agentDefinition `json:"definition"`
}

type agentDefinition struct {
	Kind         string            `json:"kind"`
	Model        string            `json:"model"`
	Instructions string            `json:"instructions"`
	Reasoning    *reasoningObject  `json:"reasoning,omitempty"`
	Tools        []json.RawMessage `json:"tools"`
}

// fields is a JSON object that keeps its members in order, for the many
// small event shapes.
type fields []field

type field struct {
	k string
	v any
}

// MarshalJSON implements json.Marshaler, without HTML escaping.
func (f fields) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, m := range f {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(m.k); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1)
		b.WriteByte(':')
		if err := enc.Encode(m.v); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// responseTurn is one response being delivered.
type responseTurn struct {
	resp  *storedResponse
	conv  *conversation
	prev  *storedResponse
	store bool
	plan  *responsePlan
	seq   int
	final *responseObject // the finished response, once built
}

// rframe is one event of a response's stream.
type rframe struct {
	name string
	data []byte
	pace bool // pause ChunkDelay before it
}

// frames builds the response's events, as the API streams them; the
// response object in the last one is the finished response.
func (t *responseTurn) frames(s *Simulator) []rframe {
	var out []rframe
	add := func(typ string, pace bool, f fields) {
		data, _ := marshalLine(append(fields{{"type", typ}, {"sequence_number", t.seq}}, f...)) // plain values always encode
		t.seq++
		out = append(out, rframe{name: typ, data: data, pace: pace})
	}
	snapshot := t.resp.obj
	add("response.created", false, fields{{"response", snapshot}})
	add("response.in_progress", false, fields{{"response", snapshot}})
	p := t.plan
	for idx, it := range p.items {
		switch it.kind {
		case "reasoning":
			text := strings.Join(it.chunks, "")
			add("response.output_item.added", false, fields{{"output_index", idx}, {"item", fields{{"id", it.id}, {"type", "reasoning"}, {"summary", []any{}}}}})
			if len(it.chunks) > 0 {
				add("response.reasoning_summary_part.added", false, fields{{"item_id", it.id}, {"output_index", idx}, {"summary_index", 0},
					{"part", fields{{"type", "summary_text"}, {"text", ""}}}})
				for _, c := range it.chunks {
					add("response.reasoning_summary_text.delta", true, fields{{"item_id", it.id}, {"output_index", idx}, {"summary_index", 0},
						{"delta", c}, {"obfuscation", obfuscation(c)}})
				}
				add("response.reasoning_summary_text.done", false, fields{{"item_id", it.id}, {"output_index", idx}, {"summary_index", 0}, {"text", text}})
				add("response.reasoning_summary_part.done", false, fields{{"item_id", it.id}, {"output_index", idx}, {"summary_index", 0},
					{"part", fields{{"type", "summary_text"}, {"text", text}}}})
			}
			add("response.output_item.done", false, fields{{"output_index", idx}, {"item", itemObject(it)}})
		case "message":
			text := strings.Join(it.chunks, "")
			add("response.output_item.added", false, fields{{"output_index", idx}, {"item", fields{{"id", it.id}, {"type", "message"},
				{"status", "in_progress"}, {"content", []any{}}, {"role", "assistant"}}}})
			add("response.content_part.added", false, fields{{"item_id", it.id}, {"output_index", idx}, {"content_index", 0},
				{"part", outputText("")}})
			for _, c := range it.chunks {
				add("response.output_text.delta", true, fields{{"item_id", it.id}, {"output_index", idx}, {"content_index", 0},
					{"delta", c}, {"logprobs", []any{}}, {"obfuscation", obfuscation(c)}})
			}
			add("response.output_text.done", false, fields{{"item_id", it.id}, {"output_index", idx}, {"content_index", 0},
				{"text", text}, {"logprobs", []any{}}})
			add("response.content_part.done", false, fields{{"item_id", it.id}, {"output_index", idx}, {"content_index", 0}, {"part", outputText(text)}})
			add("response.output_item.done", false, fields{{"output_index", idx}, {"item", itemObject(it)}})
		case "function_call":
			c := it.call
			add("response.output_item.added", false, fields{{"output_index", idx}, {"item", fields{{"id", it.id}, {"type", "function_call"},
				{"status", "in_progress"}, {"arguments", ""}, {"call_id", c.id}, {"name", c.name}}}})
			for _, frag := range splitArgs(c.arguments) {
				add("response.function_call_arguments.delta", false, fields{{"item_id", it.id}, {"output_index", idx}, {"delta", frag}, {"obfuscation", obfuscation(frag)}})
			}
			add("response.function_call_arguments.done", false, fields{{"item_id", it.id}, {"name", c.name}, {"output_index", idx}, {"arguments", c.arguments}})
			add("response.output_item.done", false, fields{{"output_index", idx}, {"item", itemObject(it)}})
		}
	}
	final := t.finished(s.now())
	t.final = &final
	switch p.end {
	case "error":
		add("error", false, fields{{"code", p.errCode}, {"message", p.errMsg}, {"param", nil}})
	default:
		add("response."+p.end, false, fields{{"response", final}})
	}
	return out
}

// finished is the response object once the plan has been delivered.
func (t *responseTurn) finished(now int64) responseObject {
	o := t.resp.obj
	p := t.plan
	o.Output = make([]json.RawMessage, len(p.items))
	for i, it := range p.items {
		o.Output[i], _ = marshalLine(itemObject(it)) // plain values always encode
	}
	u := &responseUsage{InputTokens: 0, OutputTokens: p.outputTokens, OutputTokensDetails: reasonTokens{ReasoningTokens: p.reasoningTokens}}
	switch p.end {
	case "completed":
		o.Status, o.CompletedAt = "completed", ptr(now)
	case "incomplete":
		o.Status, o.IncompleteDetails = "incomplete", &incompleteObject{Reason: p.errCode}
	case "failed", "error":
		o.Status, o.Error, u = "failed", &lastError{Code: p.errCode, Message: p.errMsg}, nil
		o.Output = []json.RawMessage{}
	}
	if u != nil {
		u.InputTokens = t.inputTokens()
		u.TotalTokens = u.InputTokens + u.OutputTokens
		o.Usage = u
	}
	return o
}

func (t *responseTurn) inputTokens() int64 { return t.resp.prompt }

// itemObject is an output item as the finished response lists it.
func itemObject(it plannedItem) fields {
	switch it.kind {
	case "reasoning":
		summary := []any{}
		if len(it.chunks) > 0 {
			summary = append(summary, fields{{"type", "summary_text"}, {"text", strings.Join(it.chunks, "")}})
		}
		return fields{{"id", it.id}, {"type", "reasoning"}, {"summary", summary}}
	case "message":
		return fields{{"id", it.id}, {"type", "message"}, {"status", "completed"},
			{"content", []any{outputText(strings.Join(it.chunks, ""))}}, {"role", "assistant"}}
	}
	c := it.call
	return fields{{"id", it.id}, {"type", "function_call"}, {"status", "completed"}, {"arguments", c.arguments}, {"call_id", c.id}, {"name", c.name}}
}

func outputText(text string) fields {
	return fields{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", text}}
}

// obfuscation pads a delta as the service does by default (characters
// that hide the length of short deltas); here deterministic.
func obfuscation(delta string) string {
	const pad = "Zx9q3LmA2bKw"
	return pad[:max(1, len(pad)-min(len(pad)-1, len(delta)))]
}

// streamResponse writes the response's events, pacing text deltas. A
// client that goes away abandons the response: it ends cancelled and adds
// nothing to its conversation.
func (s *Simulator) streamResponse(ctx context.Context, w http.ResponseWriter, t *responseTurn) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if flush(rc) != nil {
		t.finish(s, false)
		return
	}
	pace := newPacer(s.chunkDelay(), time.Now, &s.traffic.late)
	for _, f := range t.frames(s) {
		if f.pace {
			pace.pause(ctx, nil)
		}
		if ctx.Err() != nil || writeEvent(w, rc, sseEvent{f.name, f.data}) != nil {
			t.finish(s, false)
			return
		}
	}
	t.finish(s, true)
}

// finish records how the response ended: delivered, it is stored with its
// final state and its conversation takes its items; abandoned, it is
// stored cancelled.
func (t *responseTurn) finish(s *Simulator, delivered bool) {
	st := s.responses
	st.mu.Lock()
	defer st.mu.Unlock()
	r := t.resp
	if delivered {
		if t.final == nil {
			f := t.finished(s.now())
			t.final = &f
		}
		r.obj = *t.final
		if r.obj.Status == "completed" {
			r.pending = t.plan.pending
		}
	} else {
		r.obj.Status = "cancelled"
	}
	if t.conv != nil {
		t.conv.active = false
		if r.obj.Status == "completed" {
			st.commit(t.conv, r.session, r)
		}
	}
	if t.store {
		st.response(r.obj.ID) // marks it used
	}
}
