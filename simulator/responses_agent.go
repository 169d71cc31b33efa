package simulator

// responsePlan is what one response of the Responses face does: its
// output items in order, and how it ends.
type responsePlan struct {
	items   []plannedItem
	end     string // "completed", "failed", "incomplete", or "error" (an error event)
	errCode string
	errMsg  string
	pending []*toolCall // the function calls it asks for

	outputTokens, reasoningTokens int64
}

// plannedItem is one output item.
type plannedItem struct {
	kind   string   // "reasoning", "message" or "function_call"
	id     string   // rs_…, msg_…, fc_…
	chunks []string // a reasoning summary's or a message's deltas
	call   *toolCall
}

// responsePlanner plans a response: the agent's move in the Responses
// API's items. It works on the response's own copy of the session and of
// the run's memory.
type responsePlanner struct {
	s         *Simulator
	cls       *classifier // the response's instructions' rules applied
	sess      *session
	run       *runMemory
	summaries bool  // the request asked for reasoning summaries
	prompt    int64 // input tokens
	plan      responsePlan
}

func (b *responsePlanner) agent() *agent {
	return &agent{s: b.s, cls: b.cls, mem: b.run, msgs: b.sess.messages, face: b}
}

// start is the agent's first move on a new message.
func (b *responsePlanner) start() {
	switch m := b.run.magic; {
	case m.errorEvent:
		b.plan.end, b.plan.errCode = "error", "server_error"
		b.plan.errMsg = "The simulator was asked for an in-stream error (" + MagicErrorEvent + ")."
	case m.fail:
		b.plan.end, b.plan.errCode = "failed", "server_error"
		b.plan.errMsg = "The model failed to generate a response. (simulated failure: " + MagicFail + ")"
	case m.incomplete:
		b.reason("Classifying the capture", "Keyword check (offline simulator, not a language model). "+
			"I was asked to run out of output tokens ("+MagicIncomplete+"), so this response ends incomplete.")
		b.plan.end, b.plan.errCode = "incomplete", "max_output_tokens"
	default:
		b.agent().think()
	}
}

// continueWith is the agent's move once its function calls are answered.
func (b *responsePlanner) continueWith(pending []*toolCall, outputs map[string]string) {
	calls := make([]*toolCall, len(pending))
	for i, c := range pending {
		cc := *c
		cc.output = outputs[c.id]
		calls[i] = &cc
	}
	b.agent().resume(calls)
}

// reason adds a reasoning item whose summary is title and text; the run's
// first honours #long:N. Without summaries asked for, the item has none,
// as a reasoning model's.
func (b *responsePlanner) reason(title, text string) {
	full := "**" + title + "**\n\n" + text
	b.plan.reasoningTokens += tokens(full)
	b.plan.outputTokens += tokens(full)
	item := plannedItem{kind: "reasoning", id: b.s.cfg.NewID("rs")}
	if b.summaries {
		item.chunks = b.run.thought(full)
	}
	b.plan.items = append(b.plan.items, item)
}

// say adds an assistant message.
func (b *responsePlanner) say(text string) {
	b.plan.outputTokens += tokens(text)
	b.plan.items = append(b.plan.items, plannedItem{kind: "message", id: b.s.cfg.NewID("msg"), chunks: splitChunks(text)})
}

// handOver adds the function calls the response asks for.
func (b *responsePlanner) handOver(calls []*toolCall) {
	for _, c := range calls {
		b.plan.outputTokens += tokens(c.name + c.arguments)
		b.plan.items = append(b.plan.items, plannedItem{kind: "function_call", id: b.s.cfg.NewID("fc"), call: c})
		b.plan.pending = append(b.plan.pending, c)
	}
}

func (b *responsePlanner) unfiled(v Verdict, why string) {
	b.reason("Answering without filing", why+" I am answering in text only, without calling file_capture: "+v.Bucket+", "+v.Status+".")
	b.say("This looks like " + v.Bucket + " (" + v.Status + "), but I did not file it.")
}

func (b *responsePlanner) callID() string { return b.s.cfg.NewID("call") }
