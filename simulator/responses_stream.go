package simulator

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/brainwire/brainwire/internal/jsonw"
	"github.com/brainwire/brainwire/responses/responseswire"
)

// The Responses face's other objects, field order as the API writes them.

type conversationObject struct {
	ID        string          `json:"id"`
	Object    string          `json:"object"`
	CreatedAt int64           `json:"created_at"`
	Metadata  json.RawMessage `json:"metadata"`
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
	Kind         string                   `json:"kind"`
	Model        string                   `json:"model"`
	Instructions string                   `json:"instructions"`
	Reasoning    *responseswire.Reasoning `json:"reasoning,omitempty"`
	Tools        []json.RawMessage        `json:"tools"`
}

// responseTurn is one response being delivered.
type responseTurn struct {
	resp  *storedResponse
	conv  *conversation
	prev  *storedResponse
	store bool
	input []convItem // what it adds to its conversation before its output
	plan  *responsePlan
	final *responseswire.Response // the finished response, once built
}

// frames builds the response's events, as the API streams them; the
// response object in the last one is the finished response.
func (t *responseTurn) frames(s *Simulator) []responseswire.Frame {
	var st responseswire.Stream
	snapshot := t.resp.obj
	st.Lifecycle("created", &snapshot)
	st.Lifecycle("in_progress", &snapshot)
	p := t.plan
	for idx, it := range p.items {
		switch it.kind {
		case "reasoning":
			st.Reasoning(idx, it.id, it.chunks)
		case "message":
			st.Message(idx, it.id, it.chunks)
		case "function_call":
			st.FunctionCall(idx, it.id, it.call.id, it.call.name, it.call.arguments)
		}
	}
	final := t.finished(s.now())
	t.final = &final
	switch p.end {
	case "error":
		st.Error(p.errCode, p.errMsg)
	default:
		st.Lifecycle(p.end, &final)
	}
	return st.Frames()
}

// finished is the response object once the plan has been delivered.
func (t *responseTurn) finished(now int64) responseswire.Response {
	o := t.resp.obj
	p := t.plan
	o.Output = make([]json.RawMessage, len(p.items))
	for i, it := range p.items {
		o.Output[i], _ = jsonw.Marshal(itemObject(it)) // plain values always encode
	}
	u := responseswire.NewUsage(0, p.outputTokens, p.reasoningTokens)
	switch p.end {
	case "completed":
		o.Status, o.CompletedAt = "completed", ptr(now)
	case "incomplete":
		o.Status, o.IncompleteDetails = "incomplete", &responseswire.Incomplete{Reason: p.errCode}
	case "failed", "error":
		o.Status, o.Error, u = "failed", &responseswire.Error{Code: p.errCode, Message: p.errMsg}, nil
		o.Output = []json.RawMessage{}
	}
	if u != nil {
		u.InputTokens = t.resp.prompt
		u.TotalTokens = u.InputTokens + u.OutputTokens
		o.Usage = u
	}
	return o
}

// itemObject is an output item as the finished response lists it.
func itemObject(it plannedItem) any {
	switch it.kind {
	case "reasoning":
		return responseswire.NewReasoningItem(it.id, it.chunks)
	case "message":
		return responseswire.NewMessageItem(it.id, it.chunks)
	}
	return responseswire.NewFunctionCallItem(it.id, it.call.id, it.call.name, it.call.arguments)
}

// streamResponse writes the response's events, pacing text deltas. A
// client that goes away abandons the response: it ends cancelled and adds
// nothing to its conversation.
func (s *Simulator) streamResponse(ctx context.Context, w http.ResponseWriter, t *responseTurn) {
	rc, pace, err := s.openStream(w, true)
	if err != nil {
		t.finish(s, false)
		return
	}
	for _, f := range t.frames(s) {
		if f.Paced {
			pace.pause(ctx, nil)
		}
		if ctx.Err() != nil || writeEvent(w, rc, sseEvent{f.Type, f.Data}) != nil {
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
			st.commit(t.conv, r.session, r, append(t.input, outputItems(t.plan)...))
		}
	}
	if t.store {
		st.responses.get(r.obj.ID) // marks it used
	}
}
