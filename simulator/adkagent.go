package simulator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk/adkwire"
	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/internal/jsonw"
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
	s      *Simulator
	ss     *adkSession
	frames []adkFrame
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
	p.s.accountADK(ss, n)
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
	m := &message{text: text, obj: foundrywire.Message{Role: "user"}}
	m.audioURL, _ = splitAudio(text)
	if ss.context == 0 {
		ss.context = 32 + tokens(p.s.cfg.Instructions) + tokens(string(defaultTools()))
	}
	ss.context += tokens(text)
	ss.messages = append(ss.messages, m)
	for len(ss.messages) > maxThreadMessages {
		p.s.accountADK(ss, -len(ss.messages[0].text))
		ss.messages = ss.messages[1:]
	}
	ss.invocation = "e-" + p.s.uuid()
	ss.pending, ss.stage, ss.audio = nil, stageNone, nil
	ss.magic, ss.retried, ss.longDone = parseMagic(text), false, false
	p.s.accountADK(ss, len(text))
	parts := make([]adkwire.Part, len(texts))
	for i, t := range texts {
		parts[i] = adkwire.Part{Text: t}
	}
	p.userEvent(parts)

	if m.audioURL != "" {
		// The URL may carry a signature, so the thoughts (kept in telemetry) do not repeat it.
		args, _ := jsonw.Marshal(map[string]string{"blob_url": m.audioURL}) // a string map always encodes
		ss.audio = m
		p.handOver(p.reason("Keyword check (offline simulator, not a language model). This capture is a voice note. "+
			"I need its transcript before I can classify it, so I am calling transcribe_audio."),
			[]*toolCall{{id: p.callID(), name: brainwire.ToolTranscribeAudio, arguments: string(args)}}, stageTranscribe)
		return
	}
	p.classifyAndFile()
}

// resume takes the responses to the calls the run handed over and goes on.
func (p *adkPlan) resume(responses []adkResponse) {
	ss := p.ss
	byID := map[string]adkResponse{}
	var unknown []string
	for _, r := range responses {
		if !slices.ContainsFunc(ss.pending, func(c *toolCall) bool { return c.id == r.ID }) {
			unknown = append(unknown, "'"+r.ID+"'")
		}
		byID[r.ID] = r
	}
	if len(unknown) > 0 {
		p.fail("ValueError", "Function call not found for function response ids: {"+strings.Join(unknown, ", ")+"}")
		return
	}
	var missing []string
	for _, c := range ss.pending {
		if _, ok := byID[c.id]; !ok {
			missing = append(missing, "'"+c.id+"'")
		}
	}
	if len(missing) > 0 {
		// ADK would wait for them; the simulator wants every call answered at once.
		p.fail("ValueError", "Function responses missing for ids: {"+strings.Join(missing, ", ")+"}")
		return
	}
	calls := ss.pending
	parts := make([]adkwire.Part, len(responses))
	for i, r := range responses {
		parts[i] = adkwire.Part{FunctionResponse: &adkwire.FunctionResponse{ID: r.ID, Name: r.Name, Response: r.Response}}
	}
	p.userEvent(parts)
	for _, c := range calls {
		c.output = string(byID[c.id].Response)
		ss.context += tokens(c.output)
	}
	ss.pending = nil
	switch ss.stage {
	case stageTranscribe:
		transcript, problem := parseTranscript(calls[0].output)
		if problem != "" {
			p.say("I couldn't transcribe the voice note (" + problem + "). Please type the capture instead.")
			return
		}
		ss.audio.transcript = &transcript
		p.s.accountADK(ss, len(transcript))
		p.classifyAndFile()
	default:
		if ss.magic.invalidBucket && !ss.retried && calls[0].bucket == invalidBucket {
			if bad, why := toolError(calls[0].output); bad {
				ss.retried = true
				c := readMessages(ss.messages)
				v := p.s.classifier.classify(c.texts)
				p.handOver(p.reason(fmt.Sprintf("file_capture rejected the bucket %q (%s): it is not one of People, Projects, Ideas or Admin. "+
					"Retrying with %s, status %s, confidence %s.", invalidBucket, why, v.Bucket, v.Status, fmtConf(v.Confidence))),
					[]*toolCall{p.fileCall(v, c.fileText, v.Bucket)}, stageFile)
				return
			}
		}
		p.say(summarize(calls))
	}
}

func (p *adkPlan) classifyAndFile() {
	ss := p.ss
	c := readMessages(ss.messages)
	v, why := p.s.verdict(p.s.classifier, c)
	switch {
	case ss.magic.errorEvent:
		// The model stream dies a few chunks in.
		chunks := p.reason(why)
		p.partials(chunks[:min(3, len(chunks))], nil, nil, "", &adkwire.Usage{PromptTokenCount: ss.context, TotalTokenCount: ss.context}, false)
		p.fail("ServerError", "503 UNAVAILABLE. {'error': {'code': 503, 'message': 'The model is overloaded. "+
			"(simulated by "+MagicErrorEvent+")', 'status': 'UNAVAILABLE'}}")
		return
	case ss.magic.fail:
		p.modelCall(p.reason(why+" Calling file_capture."), nil, nil, "MALFORMED_FUNCTION_CALL",
			"Malformed function call: the arguments of file_capture are not valid JSON. (simulated failure: "+MagicFail+")")
		return
	case ss.magic.noTool:
		p.modelCall(p.reason(why+" I am answering in text only, without calling file_capture."),
			splitChunks(v.Bucket+", "+v.Status+"."), nil, "", "")
		return
	}
	var calls []*toolCall
	switch {
	case ss.magic.invalidBucket && !ss.retried:
		calls = []*toolCall{p.fileCall(v, c.fileText, invalidBucket)}
	case ss.magic.twoCalls && v.Status != brainwire.StatusMisunderstood:
		runnerUp := p.s.runnerUpCall(v, c.fileText)
		runnerUp.id = p.callID()
		calls = []*toolCall{p.fileCall(v, c.fileText, v.Bucket), runnerUp}
	default:
		calls = []*toolCall{p.fileCall(v, c.fileText, v.Bucket)}
	}
	next := fmt.Sprintf(" Title \"%s\". Calling file_capture.", v.Title)
	if len(calls) > 1 {
		next = fmt.Sprintf(" Title \"%s\". Calling file_capture twice: %s, and %s as the runner-up.", v.Title, calls[0].bucket, calls[1].bucket)
	}
	p.handOver(p.reason(why+next), calls, stageFile)
}

func (p *adkPlan) callID() string { return "adk-" + p.s.uuid() }

func (p *adkPlan) fileCall(v Verdict, text, bucket string) *toolCall {
	c := p.s.fileCall(v, text, bucket)
	c.id = p.callID()
	return c
}

// reason cuts thought text into chunks; the run's first model call
// honours #long:N.
func (p *adkPlan) reason(text string) []string {
	chunks := splitChunks(text)
	if n := p.ss.magic.long; n > 0 && !p.ss.longDone {
		chunks = fitChunks(chunks, n)
		p.ss.longDone = true
	}
	return chunks
}

// say answers in text: the agent's final response.
func (p *adkPlan) say(text string) { p.modelCall(nil, splitChunks(text), nil, "", "") }

// handOver makes a model call that calls tools the client runs: the run
// pauses until their responses come.
func (p *adkPlan) handOver(thoughts []string, calls []*toolCall, st stage) {
	p.modelCall(thoughts, nil, calls, "", "")
	p.ss.pending, p.ss.stage = calls, st
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
		ModelVersion: p.s.cfg.Model,
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
