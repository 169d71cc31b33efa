package simulator

import (
	"fmt"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/jsonw"
)

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

// responsePlanner plans a response: the agent's move, the same keyword
// classifier and magic phrases as the threads/runs face, in the
// Responses API's items. It works on the response's own copy of the
// session and of the run's memory.
type responsePlanner struct {
	s         *Simulator
	cls       *classifier // the response's instructions' rules applied
	sess      *session
	run       *runMemory
	summaries bool  // the request asked for reasoning summaries
	prompt    int64 // input tokens
	plan      *responsePlan
}

func (b *responsePlanner) init() {
	if b.plan == nil {
		b.plan = &responsePlan{end: "completed"}
	}
}

// start is the agent's first move on a new message.
func (b *responsePlanner) start() {
	b.init()
	m := b.run.magic
	switch {
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
		b.think()
	}
}

// continueWith is the agent's move once its function calls are answered.
func (b *responsePlanner) continueWith(pending []*toolCall, outputs map[string]string) {
	b.init()
	calls := make([]*toolCall, len(pending))
	for i, c := range pending {
		cc := *c
		cc.output = outputs[c.id]
		calls[i] = &cc
	}
	run := b.run
	switch run.stage {
	case stageTranscribe:
		transcript, problem := parseTranscript(calls[0].output)
		if problem != "" {
			b.say("I couldn't transcribe the voice note (" + problem + "). Please type the capture instead.")
			return
		}
		if run.audio >= 0 && run.audio < len(b.sess.messages) {
			b.sess.messages[run.audio].transcript = &transcript
		}
		b.classifyAndFile()
	default:
		if run.magic.invalidBucket && !run.retried && len(calls) > 0 && calls[0].bucket == invalidBucket {
			if bad, why := toolError(calls[0].output); bad {
				run.retried = true
				c := readSession(b.sess)
				v := b.cls.classify(c.texts)
				b.reason("Retrying with a valid bucket", fmt.Sprintf("file_capture rejected the bucket %q (%s): it is not one of People, Projects, Ideas or Admin. "+
					"Retrying with %s, status %s, confidence %s.", invalidBucket, why, v.Bucket, v.Status, fmtConf(v.Confidence)))
				b.call(b.s.fileCall(v, c.fileText, v.Bucket))
				run.stage = stageFile
				return
			}
		}
		b.say(summarize(calls))
	}
}

// think starts on a new message: a voice note is transcribed first.
func (b *responsePlanner) think() {
	for i := len(b.sess.messages) - 1; i >= 0; i-- {
		m := b.sess.messages[i]
		if m.role != "user" {
			continue
		}
		if m.transcript == nil && m.audioURL != "" && b.run.offers(brainwire.ToolTranscribeAudio) {
			// The URL may carry a signature, so the reasoning (kept in telemetry) does not repeat it.
			b.reason("Transcribing the voice note", "Keyword check (offline simulator, not a language model). This capture is a voice note. "+
				"I need its transcript before I can classify it, so I am calling transcribe_audio.")
			args, _ := jsonw.Marshal(map[string]string{"blob_url": m.audioURL}) // a string map always encodes
			b.run.audio, b.run.stage = i, stageTranscribe
			b.call(&toolCall{id: b.s.cfg.NewID("call"), name: brainwire.ToolTranscribeAudio, arguments: string(args)})
			return
		}
		break
	}
	b.classifyAndFile()
}

func (b *responsePlanner) classifyAndFile() {
	c := readSession(b.sess)
	v, why := b.s.verdict(b.cls, c)
	run := b.run
	if run.magic.noTool || !run.offers(brainwire.ToolFileCapture) {
		b.reason("Answering without filing", why+" I am answering in text only, without calling file_capture: "+v.Bucket+", "+v.Status+".")
		b.say("This looks like " + v.Bucket + " (" + v.Status + "), but I did not file it.")
		return
	}
	var calls []*toolCall
	switch {
	case run.magic.invalidBucket && !run.retried:
		calls = []*toolCall{b.s.fileCall(v, c.fileText, invalidBucket)}
	case run.magic.twoCalls && v.Status != brainwire.StatusMisunderstood:
		calls = []*toolCall{b.s.fileCall(v, c.fileText, v.Bucket), b.s.runnerUpCall(v, c.fileText)}
	default:
		calls = []*toolCall{b.s.fileCall(v, c.fileText, v.Bucket)}
	}
	next := fmt.Sprintf(" Title \"%s\". Calling file_capture.", v.Title)
	if len(calls) > 1 {
		next = fmt.Sprintf(" Title \"%s\". Calling file_capture twice: %s, and %s as the runner-up.", v.Title, calls[0].bucket, calls[1].bucket)
	}
	b.reason("Classifying the capture", why+next)
	for _, call := range calls {
		b.call(call)
	}
	run.stage = stageFile
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
		chunks := splitChunks(full)
		if n := b.run.magic.long; n > 0 && !b.run.longDone {
			chunks = fitChunks(chunks, n)
			b.run.longDone = true
		}
		item.chunks = chunks
	}
	b.plan.items = append(b.plan.items, item)
}

// say adds an assistant message.
func (b *responsePlanner) say(text string) {
	b.plan.outputTokens += tokens(text)
	b.plan.items = append(b.plan.items, plannedItem{kind: "message", id: b.s.cfg.NewID("msg"), chunks: splitChunks(text)})
}

// call adds a function call the response asks for.
func (b *responsePlanner) call(c *toolCall) {
	b.plan.outputTokens += tokens(c.name + c.arguments)
	b.plan.items = append(b.plan.items, plannedItem{kind: "function_call", id: b.s.cfg.NewID("fc"), call: c})
	b.plan.pending = append(b.plan.pending, c)
}

// readSession gathers the user messages, as readThread does for a thread.
func readSession(sess *session) capture {
	var c capture
	var files []string
	for _, m := range sess.messages {
		if m.role != "user" {
			continue
		}
		_, rest := splitAudio(m.text)
		text := rest
		c.voice = false
		if m.transcript != nil {
			text = strings.TrimSpace(rest + "\n" + *m.transcript)
			c.voice = true
		}
		if text == "" {
			continue
		}
		c.texts = append(c.texts, strings.TrimSpace(stripMagic(text)))
		files = append(files, text)
	}
	if len(c.texts) == 0 {
		c.texts = []string{""}
	}
	c.fileText = strings.Join(files, "\n")
	return c
}
