package simulator

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk/adkwire"
)

// The ADK face's agent: the same keyword classifier and magic phrases as
// the Foundry face, acting the way an ADK agent with brainwire's tools
// declared as long-running tools does. A model call streams its thoughts
// as partial events, then the call's aggregated event; a call of
// file_capture or transcribe_audio is handed over (longRunningToolIds)
// and the run pauses, to resume when the function's response comes in a
// later /run_sse call on the session.

// adkPlan builds the frames of one /run_sse answer; it runs under
// Simulator.mu and applies the run's effect on the session at once, as
// the server records events whether or not anyone reads them.
type adkPlan struct {
	s        *Simulator
	ss       *adkSession
	frames   []adkFrame
	thoughts []string // reasoning for the next model call
}

// planADK plans the answer to a message; the caller holds s.mu.
func (s *Simulator) planADK(ss *adkSession, m adkMessage) []adkFrame {
	p := &adkPlan{s: s, ss: ss}
	switch {
	case len(m.responses) > 0 && len(m.texts) > 0:
		p.fail("ValueError", "Message cannot contain both function responses and text. Send the function responses "+
			"alone, and any new text in a later message.")
	case len(m.responses) > 0:
		p.resume(m.responses)
	default:
		p.start(m.texts)
	}
	return p.frames
}

// maxSessionEvents bounds the events a session keeps; the oldest go
// first.
const maxSessionEvents = 4 * maxThreadMessages

// record appends an event to the session, as the server does with each
// message it takes and each event of the agent but the partial ones.
func (p *adkPlan) record(ev adkwire.Event) {
	ss := p.ss
	now := p.s.cfg.Now()
	ev.Timestamp = adkwire.Time(now)
	ss.obj.Events = append(ss.obj.Events, ev)
	ss.obj.LastUpdateTime = adkwire.Time(now)
	n := eventBytes(ev)
	if over := len(ss.obj.Events) - maxSessionEvents; over > 0 {
		for _, old := range ss.obj.Events[:over] {
			n -= eventBytes(old)
		}
		ss.obj.Events = slices.Delete(ss.obj.Events, 0, over)
	}
	p.s.adk.grow(ss.key, n)
}

// eventBytes is about what an event holds, for eviction.
func eventBytes(ev adkwire.Event) int {
	n := 256
	if ev.Content != nil {
		for _, part := range ev.Content.Parts {
			n += len(part.Text)
			if part.FunctionCall != nil {
				n += len(part.FunctionCall.Args)
			}
			if part.FunctionResponse != nil {
				if raw, ok := part.FunctionResponse.Response.(json.RawMessage); ok {
					n += len(raw)
				}
			}
		}
	}
	return n
}

// userEvent records the message the server took from the user.
func (p *adkPlan) userEvent(parts []adkwire.Part) {
	p.record(adkwire.Event{Content: &adkwire.Content{Parts: parts, Role: "user"}, InvocationID: p.ss.invocation,
		Author: "user", ID: p.s.uuid()})
}

// start runs the agent on the user's new message. Calls still waiting
// from an abandoned run are dropped, as ADK prunes orphaned calls.
func (p *adkPlan) start(texts []string) {
	ss := p.ss
	text := strings.Join(texts, "\n")
	if ss.context == 0 {
		ss.context = 32 + tokens(p.s.cfg.Instructions) + tokens(string(defaultTools()))
	}
	ss.context += tokens(text)
	ss.messages = append(ss.messages, newMessage("user", text))
	for len(ss.messages) > maxThreadMessages {
		p.s.adk.grow(ss.key, -len(ss.messages[0].text))
		ss.messages = ss.messages[1:]
	}
	ss.invocation = "e-" + p.s.uuid()
	ss.pending = nil
	ss.mem = runMemory{magic: parseMagic(text), tools: map[string]bool{brainwire.ToolFileCapture: true, brainwire.ToolTranscribeAudio: true}}
	p.s.adk.grow(ss.key, len(text))
	parts := make([]adkwire.Part, len(texts))
	for i, t := range texts {
		parts[i] = adkwire.Part{Text: t}
	}
	p.userEvent(parts)
	p.agent().think()
}

func (p *adkPlan) agent() *agent {
	return &agent{s: p.s, cls: p.s.classifier, mem: &p.ss.mem, msgs: p.ss.messages, face: p}
}

// resume takes the responses to the calls the run handed over and goes on.
func (p *adkPlan) resume(responses []adkResponse) {
	ss := p.ss
	outputs := map[string]string{}
	for _, r := range responses {
		outputs[r.ID] = string(r.Response)
	}
	quoted := func(ids []string) string { return "{'" + strings.Join(ids, "', '") + "'}" }
	switch unknown, missing := unanswered(ss.pending, outputs); {
	case len(unknown) > 0:
		p.fail("ValueError", "Function call not found for function response ids: "+quoted(unknown))
		return
	case len(missing) > 0:
		// ADK would wait for them; the simulator wants every call answered at once.
		p.fail("ValueError", "Function responses missing for ids: "+quoted(missing))
		return
	}
	calls := ss.pending
	parts := make([]adkwire.Part, len(responses))
	for i, r := range responses {
		parts[i] = adkwire.Part{FunctionResponse: &adkwire.FunctionResponse{ID: r.ID, Name: r.Name, Response: r.Response}}
	}
	p.userEvent(parts)
	for _, c := range calls {
		c.output = outputs[c.id]
		ss.context += tokens(c.output)
	}
	ss.pending = nil
	p.agent().resume(calls)
	if m := newestUser(ss.messages); m != nil && m.transcript != nil && calls[0].name == brainwire.ToolTranscribeAudio {
		p.s.adk.grow(ss.key, len(*m.transcript))
	}
}

// The ADK face's moves: reasoning waits for the model call it belongs
// to; an answer or calls make one.

func (p *adkPlan) reason(_, text string) { p.thoughts = p.ss.mem.thought(text) }

func (p *adkPlan) say(text string) { p.modelCall(p.takeThoughts(), splitChunks(text), nil, "", "") }

// handOver makes a model call that calls tools the client runs: the run
// pauses until their responses come.
func (p *adkPlan) handOver(calls []*toolCall) {
	p.modelCall(p.takeThoughts(), nil, calls, "", "")
	p.ss.pending = calls
}

func (p *adkPlan) unfiled(v Verdict, why string) {
	p.modelCall(p.ss.mem.thought(why+" I am answering in text only, without calling file_capture."),
		splitChunks(v.Bucket+", "+v.Status+"."), nil, "", "")
}

func (p *adkPlan) failModel(why string) {
	if p.ss.mem.magic.errorEvent {
		// The model stream dies a few chunks in.
		chunks := p.ss.mem.thought(why)
		p.partials(chunks[:min(3, len(chunks))], nil, nil, "", &adkwire.Usage{PromptTokenCount: p.ss.context, TotalTokenCount: p.ss.context}, false)
		p.fail("ServerError", "503 UNAVAILABLE. {'error': {'code': 503, 'message': 'The model is overloaded. "+
			"(simulated by "+MagicErrorEvent+")', 'status': 'UNAVAILABLE'}}")
		return
	}
	p.modelCall(p.ss.mem.thought(why+" Calling file_capture."), nil, nil, "MALFORMED_FUNCTION_CALL",
		"Malformed function call: the arguments of file_capture are not valid JSON. (simulated failure: "+MagicFail+")")
}

func (p *adkPlan) callID() string { return "adk-" + p.s.uuid() }

func (p *adkPlan) takeThoughts() []string {
	t := p.thoughts
	p.thoughts = nil
	return t
}

// fail ends the stream with an error frame: an exception the server
// caught after the stream had started.
func (p *adkPlan) fail(errType, msg string) {
	p.frames = append(p.frames, adkFrame{errType: errType, errMsg: msg})
}

// modelCall streams one model call: a partial event per thought and text
// chunk and one with the function calls, then the aggregated event that
// repeats them, with the finish reason, the usage and the long-running
// call ids. A non-empty errCode makes it a failed call.
func (p *adkPlan) modelCall(thoughts, texts []string, calls []*toolCall, errCode, errMsg string) {
	ss := p.ss
	thoughtText, text := strings.Join(thoughts, ""), strings.Join(texts, "")
	prompt := ss.context
	thinking, written := tokens(thoughtText), tokens(text)
	for _, c := range calls {
		written += tokens(c.name + c.arguments)
	}
	ss.context += thinking + written
	usage := &adkwire.Usage{CandidatesTokenCount: written, PromptTokenCount: prompt, ThoughtsTokenCount: thinking, TotalTokenCount: prompt + thinking + written}
	id := p.s.uuid()
	p.partials(thoughts, texts, calls, id, usage, true)

	var parts []adkwire.Part
	if thoughtText != "" {
		parts = append(parts, adkwire.Part{Text: thoughtText, Thought: true})
	}
	if text != "" {
		parts = append(parts, adkwire.Part{Text: text})
	}
	parts = append(parts, callParts(calls)...)
	ev := p.event(id, false, parts)
	ev.FinishReason, ev.UsageMetadata, ev.LongRunningToolIDs = "STOP", usage, callIDs(calls)
	if errCode != "" {
		ev.FinishReason, ev.ErrorCode, ev.ErrorMessage = errCode, errCode, errMsg
	}
	p.record(*ev)
	p.frames = append(p.frames, adkFrame{ev: ev})
}

// partials adds the partial events of a model call with event id id (a
// new one when empty): the first carries the prompt's usage and, when the
// call is closing, the last the finish reason and the whole usage.
func (p *adkPlan) partials(thoughts, texts []string, calls []*toolCall, id string, usage *adkwire.Usage, closing bool) {
	if id == "" {
		id = p.s.uuid()
	}
	start := len(p.frames)
	for _, th := range thoughts {
		p.frames = append(p.frames, adkFrame{pace: true, isStream: true, ev: p.event(id, true, []adkwire.Part{{Text: th, Thought: true}})})
	}
	for _, tx := range texts {
		p.frames = append(p.frames, adkFrame{pace: true, isStream: true, ev: p.event(id, true, []adkwire.Part{{Text: tx}})})
	}
	if len(calls) > 0 {
		p.frames = append(p.frames, adkFrame{pace: true, isStream: true, ev: p.event(id, true, callParts(calls))})
	}
	n := len(p.frames) - start
	if n == 0 {
		return
	}
	if n > 1 {
		p.frames[start].ev.UsageMetadata = &adkwire.Usage{PromptTokenCount: usage.PromptTokenCount, TotalTokenCount: usage.PromptTokenCount}
	}
	if closing {
		last := p.frames[len(p.frames)-1].ev
		last.FinishReason, last.UsageMetadata, last.LongRunningToolIDs = "STOP", usage, callIDs(calls)
	}
}

func (p *adkPlan) event(id string, partial bool, parts []adkwire.Part) *adkwire.Event {
	return &adkwire.Event{
		ModelVersion: DefaultModel,
		Content:      &adkwire.Content{Parts: parts, Role: "model"},
		Partial:      &partial,
		InvocationID: p.ss.invocation,
		Author:       adkAuthor,
		NodeInfo:     adkwire.Node{Path: adkAuthor + "@1"},
		ID:           id,
	}
}

func callParts(calls []*toolCall) []adkwire.Part {
	parts := make([]adkwire.Part, len(calls))
	for i, c := range calls {
		parts[i] = adkwire.Part{FunctionCall: &adkwire.FunctionCall{ID: c.id, Args: json.RawMessage(c.arguments), Name: c.name},
			ThoughtSignature: adkSignature(c.id)}
	}
	return parts
}

// callIDs lists the calls handed over: all of the agent's calls are of
// long-running tools.
func callIDs(calls []*toolCall) []string {
	if len(calls) == 0 {
		return nil // an event without calls has none
	}
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.id
	}
	return ids
}

// uuid returns a version-4-shaped UUID drawn from Config.NewID, so that
// seeded ids stay deterministic: ADK names sessions, events and
// invocations with uuid4s.
func (s *Simulator) uuid() string {
	sum := sha256.Sum256([]byte(s.cfg.NewID("uuid")))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// adkSignature stands for the opaque signature Gemini puts on
// function-call parts.
func adkSignature(id string) string {
	sum := sha256.Sum256([]byte(id))
	return base64.URLEncoding.EncodeToString(sum[:16])
}
