package simulator

import (
	"encoding/json"
	"strings"

	"github.com/brainwire/brainwire/foundry/foundrywire"
)

// frame is one event of a turn. apply runs under Simulator.mu when the
// event is due, moves the visible state on, and returns the payload.
type frame struct {
	event string // "" changes state but writes nothing
	pace  bool   // pause ChunkDelay before it
	apply func(now int64) any
}

// turn is what one HTTP response delivers: from run creation (or tool
// outputs) to requires_action or a terminal state.
type turn struct {
	run    *run
	frames []frame
	done   bool // end with "event: done"

	cancelCh  chan struct{} // closed when a cancel is requested
	cancelled bool
}

// builder plans a turn; it runs under Simulator.mu.
type builder struct {
	s  *Simulator
	th *thread
	r  *run
	t  *turn
}

func (s *Simulator) newBuilder(th *thread, r *run) *builder {
	return &builder{s: s, th: th, r: r, t: &turn{run: r, cancelCh: make(chan struct{})}}
}

func (b *builder) add(event string, pace bool, apply func(now int64) any) {
	b.t.frames = append(b.t.frames, frame{event: event, pace: pace, apply: apply})
}

func (b *builder) runEvent(event string, change func(o *foundrywire.Run, now int64)) {
	b.add(event, false, func(now int64) any {
		if change != nil {
			change(&b.r.obj, now)
		}
		return b.r.obj
	})
}

// planStart plans a new run's first turn; the caller holds s.mu.
func (s *Simulator) planStart(th *thread, r *run, withThread bool) *turn {
	b := s.newBuilder(th, r)
	if withThread {
		b.add("thread.created", false, func(int64) any { return th.obj })
	}
	b.runEvent("thread.run.created", nil)
	b.runEvent("thread.run.queued", nil)
	b.runEvent("thread.run.in_progress", func(o *foundrywire.Run, now int64) {
		o.Status = "in_progress"
		o.StartedAt = ptr(now)
	})
	switch {
	case r.mem.magic.errorEvent:
		b.errorEvent("The simulator was asked for an in-stream error (" + MagicErrorEvent + ").")
	case r.mem.magic.fail:
		b.fail("server_error", "Sorry, something went wrong. (simulated failure: "+MagicFail+")")
	default:
		b.agent().think()
	}
	return b.t
}

// planContinue plans the turn after tool outputs; the caller holds s.mu and
// has checked outputs against the pending calls.
func (s *Simulator) planContinue(th *thread, r *run, outputs map[string]string) *turn {
	b := s.newBuilder(th, r)
	calls := r.pending
	for _, c := range calls {
		c.output = outputs[c.id]
		r.context += tokens(c.output)
	}
	b.completeToolStep(r.toolStep, calls, r.stepUsage)
	r.pending, r.toolStep = nil, nil
	b.runEvent("thread.run.queued", nil)
	b.runEvent("thread.run.in_progress", func(o *foundrywire.Run, now int64) {
		o.Status = "in_progress"
		o.StartedAt = ptr(now)
	})
	b.agent().resume(calls)
	return b.t
}

func (b *builder) agent() *agent {
	return &agent{s: b.s, cls: b.r.classify, mem: &b.r.mem, msgs: b.th.messages, face: b}
}

// The threads face's moves: each reasoning and answer is a message step,
// calls are a tool step and requires_action.

func (b *builder) reason(_, text string) { b.messageStep(b.r.mem.thought(text)) }

func (b *builder) say(text string) {
	b.messageStep(splitChunks(text))
	b.complete()
}

func (b *builder) handOver(calls []*toolCall) {
	b.toolStep(calls)
	b.requiresAction()
}

func (b *builder) unfiled(v Verdict, why string) {
	b.reason("", why+" I am answering in text only, without calling file_capture: "+v.Bucket+", "+v.Status+".")
	b.complete()
}

func (b *builder) callID() string { return b.s.cfg.NewID("call") }

func (b *builder) messageStep(chunks []string) {
	r, th, s := b.r, b.th, b.s
	text := strings.Join(chunks, "")
	prompt, completion := r.context, tokens(text)
	r.context += completion
	st := b.newStep("message_creation")
	msg := &message{obj: foundrywire.Message{
		ID:          s.cfg.NewID("msg"),
		Object:      "thread.message",
		AssistantID: ptr(r.obj.AssistantID),
		ThreadID:    th.obj.ID,
		RunID:       ptr(r.obj.ID),
		Status:      "in_progress",
		Role:        "assistant",
		Content:     []foundrywire.ContentPart{},
		Attachments: []json.RawMessage{},
		Metadata:    json.RawMessage(`{}`),
	}}
	st.StepDetails = foundrywire.StepDetails{Type: "message_creation", MessageCreation: &foundrywire.MessageCreation{MessageID: msg.obj.ID}}

	b.add("thread.run.step.created", false, func(now int64) any {
		st.CreatedAt = now
		return *st
	})
	b.add("thread.run.step.in_progress", false, func(int64) any { return *st })
	b.add("thread.message.created", false, func(now int64) any {
		msg.obj.CreatedAt = now
		s.addMessage(th, msg)
		return msg.obj
	})
	b.add("thread.message.in_progress", false, func(int64) any { return msg.obj })
	for i, c := range chunks {
		d := foundrywire.TextDelta(msg.obj.ID, c, i == 0)
		b.add("thread.message.delta", true, func(int64) any { return d })
	}
	b.add("thread.message.completed", false, func(now int64) any {
		msg.obj.Status = "completed"
		msg.obj.CompletedAt = ptr(now)
		msg.obj.Content = foundrywire.TextContent(text)
		s.setMessageText(th, msg, text)
		return msg.obj
	})
	u := foundrywire.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	b.add("thread.run.step.completed", false, func(now int64) any {
		st.Status = "completed"
		st.CompletedAt = ptr(now)
		st.Usage = ptr(u)
		r.usage = r.usage.Add(u)
		return *st
	})
}

func (b *builder) newStep(kind string) *foundrywire.Step {
	st := &foundrywire.Step{
		ID:          b.s.cfg.NewID("step"),
		Object:      "thread.run.step",
		RunID:       b.r.obj.ID,
		AssistantID: b.r.obj.AssistantID,
		ThreadID:    b.th.obj.ID,
		Type:        kind,
		Status:      "in_progress",
	}
	if b.r.obj.ExpiresAt != nil {
		st.ExpiresAt = ptr(*b.r.obj.ExpiresAt)
	}
	return st
}

// toolStep streams the calls as step deltas: per call a chunk with id and
// name, then the arguments in fragments.
func (b *builder) toolStep(calls []*toolCall) {
	r := b.r
	step := b.newStep("tool_calls")
	step.StepDetails = foundrywire.StepDetails{Type: "tool_calls", ToolCalls: &[]foundrywire.StepToolCall{}}
	var completion int64
	for _, c := range calls {
		completion += tokens(c.name + c.arguments)
	}
	r.stepUsage = foundrywire.Usage{PromptTokens: r.context, CompletionTokens: completion, TotalTokens: r.context + completion}
	r.context += completion
	r.pending, r.toolStep = calls, step

	b.add("thread.run.step.created", false, func(now int64) any {
		step.CreatedAt = now
		return *step
	})
	b.add("thread.run.step.in_progress", false, func(int64) any { return *step })
	for i, c := range calls {
		b.add("thread.run.step.delta", false, func(int64) any {
			return foundrywire.ToolDelta(step.ID, foundrywire.CallStart(i, c.id, c.name))
		})
		for _, frag := range splitArgs(c.arguments) {
			b.add("thread.run.step.delta", false, func(int64) any {
				return foundrywire.ToolDelta(step.ID, foundrywire.CallArguments(i, frag))
			})
		}
	}
}

func (b *builder) completeToolStep(step *foundrywire.Step, calls []*toolCall, u foundrywire.Usage) {
	r := b.r
	b.add("thread.run.step.completed", false, func(now int64) any {
		done := make([]foundrywire.StepToolCall, len(calls))
		for i, c := range calls {
			done[i] = foundrywire.StepToolCall{ID: c.id, Type: "function",
				Function: foundrywire.StepFunction{Name: c.name, Arguments: c.arguments, Output: ptr(c.output)}}
		}
		step.StepDetails.ToolCalls = &done
		step.Status = "completed"
		step.CompletedAt = ptr(now)
		step.Usage = ptr(u)
		r.usage = r.usage.Add(u)
		return *step
	})
}

func (b *builder) requiresAction() {
	calls := make([]foundrywire.RequiredCall, len(b.r.pending))
	for i, c := range b.r.pending {
		calls[i] = foundrywire.RequiredCall{ID: c.id, Type: "function", Function: foundrywire.FunctionCall{Name: c.name, Arguments: c.arguments}}
	}
	b.runEvent("thread.run.requires_action", func(o *foundrywire.Run, _ int64) {
		o.Status = "requires_action"
		o.RequiredAction = &foundrywire.RequiredAction{Type: "submit_tool_outputs", SubmitToolOutputs: foundrywire.SubmitToolOutputs{ToolCalls: calls}}
	})
	b.t.done = true
}

func (b *builder) complete() {
	b.runEvent("thread.run.completed", func(o *foundrywire.Run, now int64) {
		o.Status = "completed"
		o.CompletedAt = ptr(now)
		o.ExpiresAt = nil
		o.RequiredAction = nil
		o.Usage = ptr(b.r.usage)
	})
	b.t.done = true
}

func (b *builder) fail(code, msg string) {
	b.runEvent("thread.run.failed", func(o *foundrywire.Run, now int64) { failRun(o, now, code, msg) })
	b.t.done = true
}

// errorEvent sends an in-stream error and ends the stream without done; the
// run is left failed so the thread can take new runs.
func (b *builder) errorEvent(msg string) {
	b.add("error", false, func(int64) any { return foundrywire.ErrorEvent{Code: "server_error", Message: msg} })
	b.add("", false, func(now int64) any {
		failRun(&b.r.obj, now, "server_error", msg)
		return nil
	})
	b.t.done = false
}

func failRun(o *foundrywire.Run, now int64, code, msg string) {
	o.Status = "failed"
	o.FailedAt = ptr(now)
	o.ExpiresAt = nil
	o.RequiredAction = nil
	o.LastError = &foundrywire.LastError{Code: code, Message: msg}
}

// cancelRun moves a run to cancelled.
func cancelRun(o *foundrywire.Run, now int64) {
	o.Status = "cancelled"
	o.CancelledAt = ptr(now)
	o.ExpiresAt = nil
	o.RequiredAction = nil
}
