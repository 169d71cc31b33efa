package simulator

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/internal/jsonw"
)

// Magic phrases: put one in the user message to drive a behaviour (see the
// package documentation).
const (
	MagicInvalidBucket = "#invalid-bucket"
	MagicTwoCalls      = "#two-calls"
	MagicNoTool        = "#no-tool"
	MagicFail          = "#fail"
	MagicErrorEvent    = "#error-event"
	MagicLong          = "#long:"      // followed by the chunk count, e.g. #long:300
	MagicIncomplete    = "#incomplete" // the Responses face only
)

// invalidBucket is what the first call names under #invalid-bucket.
const invalidBucket = "Misc"

type magic struct {
	invalidBucket bool
	twoCalls      bool
	noTool        bool
	fail          bool
	errorEvent    bool
	incomplete    bool
	long          int // reasoning chunks of the run's first message; 0 = natural
	refuse        refusal
}

// hashTag is one #tag in a text, lower-cased, with its byte span.
type hashTag struct {
	tag        string
	start, end int
}

func hashTags(text string) []hashTag {
	var out []hashTag
	for i := 0; i < len(text); i++ {
		if text[i] != '#' {
			continue
		}
		j := i + 1
		for j < len(text) {
			c := text[j] | 0x20 // ASCII lower case; digits, ':' and '-' are unchanged
			if (c >= 'a' && c <= 'z') || (text[j] >= '0' && text[j] <= '9') || text[j] == ':' || text[j] == '-' {
				j++
				continue
			}
			break
		}
		if j > i+1 {
			out = append(out, hashTag{tag: strings.ToLower(text[i:j]), start: i, end: j})
		}
		i = j - 1
	}
	return out
}

// applyTag sets the flag tag names and reports whether it is magic.
func (m *magic) applyTag(tag string) bool {
	switch tag {
	case MagicInvalidBucket:
		m.invalidBucket = true
	case MagicTwoCalls:
		m.twoCalls = true
	case MagicNoTool:
		m.noTool = true
	case MagicFail:
		m.fail = true
	case MagicErrorEvent:
		m.errorEvent = true
	case MagicIncomplete:
		m.incomplete = true
	default:
		if arg, ok := strings.CutPrefix(tag, MagicRefuse); ok {
			r, ok := parseRefusal(arg)
			if ok {
				m.refuse = r
			}
			return ok
		}
		n, ok := strings.CutPrefix(tag, MagicLong)
		if !ok {
			return false
		}
		count, err := strconv.Atoi(n)
		if err != nil || count < 1 {
			return false
		}
		m.long = min(count, maxLongChunks)
	}
	return true
}

func parseMagic(text string) magic {
	var m magic
	for _, h := range hashTags(text) {
		m.applyTag(h.tag)
	}
	return m
}

// stripMagic removes magic phrases so they do not count as words.
func stripMagic(text string) string {
	var b strings.Builder
	last := 0
	for _, h := range hashTags(text) {
		var m magic
		if m.applyTag(h.tag) {
			b.WriteString(text[last:h.start])
			last = h.end
		}
	}
	b.WriteString(text[last:])
	return b.String()
}

// splitAudio finds an "audio: <url>" line and returns the URL and the
// other lines.
func splitAudio(text string) (url, rest string) {
	var keep []string
	for line := range strings.SplitSeq(text, "\n") {
		if url == "" {
			if u := audioLine(strings.TrimSpace(line)); u != "" {
				url = u
				continue
			}
		}
		keep = append(keep, line)
	}
	return url, strings.TrimSpace(strings.Join(keep, "\n"))
}

// audioLine returns the URL of a line "audio: <url>" (or audio_url:,
// blob_url:), else "".
func audioLine(line string) string {
	for _, p := range [...]string{"audio:", "audio_url:", "blob_url:"} {
		if len(line) > len(p) && strings.EqualFold(line[:len(p)], p) {
			if f := strings.Fields(line[len(p):]); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// capture is what the agent reads from the thread for one classification.
type capture struct {
	texts    []string // classification texts, oldest first
	fileText string   // the file_capture "text" argument
	voice    bool     // the newest message's text came from a transcript
}

// readThread gathers the user messages; the caller holds s.mu.
func readThread(th *thread) capture { return readMessages(th.messages) }

// readMessages gathers the user messages of a conversation.
func readMessages(msgs []*message) capture {
	var c capture
	var files []string
	for _, m := range msgs {
		if m.obj.Role != "user" {
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

// newestUser returns the thread's newest user message; the caller holds s.mu.
func newestUser(th *thread) *message {
	for i := len(th.messages) - 1; i >= 0; i-- {
		if th.messages[i].obj.Role == "user" {
			return th.messages[i]
		}
	}
	return nil
}

type stage uint8

const (
	stageNone stage = iota
	stageTranscribe
	stageFile
)

// toolCall is one call the agent made.
type toolCall struct {
	id        string
	name      string
	arguments string
	output    string
	bucket    string // file_capture: as asked
	status    string
}

type fileArgs struct {
	Text       string  `json:"text"`
	Bucket     string  `json:"bucket"`
	Confidence float64 `json:"confidence"`
	Status     string  `json:"status"`
	Title      string  `json:"title"`
	Question   string  `json:"question,omitempty"`
}

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
	case r.magic.errorEvent:
		b.errorEvent("The simulator was asked for an in-stream error (" + MagicErrorEvent + ").")
	case r.magic.fail:
		b.fail("server_error", "Sorry, something went wrong. (simulated failure: "+MagicFail+")")
	default:
		b.think()
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

	switch r.stage {
	case stageTranscribe:
		transcript, problem := parseTranscript(calls[0].output)
		if problem != "" {
			b.say("I couldn't transcribe the voice note (" + problem + "). Please type the capture instead.")
			b.complete()
			break
		}
		r.audio.transcript = &transcript
		b.classifyAndFile()
	default:
		if r.magic.invalidBucket && !r.retried && len(calls) > 0 && calls[0].bucket == invalidBucket {
			if bad, why := toolError(calls[0].output); bad {
				r.retried = true
				c := readThread(th)
				v := r.classify.classify(c.texts)
				b.reason(fmt.Sprintf("file_capture rejected the bucket %q (%s): it is not one of People, Projects, Ideas or Admin. "+
					"Retrying with %s, status %s, confidence %s.", invalidBucket, why, v.Bucket, v.Status, fmtConf(v.Confidence)))
				b.toolStep([]*toolCall{s.fileCall(v, c.fileText, v.Bucket)}, stageFile)
				b.requiresAction()
				break
			}
		}
		b.say(summarize(calls))
		b.complete()
	}
	return b.t
}

// think is the agent's first move once the run is in progress.
func (b *builder) think() {
	if m := newestUser(b.th); m != nil && m.transcript == nil && b.r.offers(brainwire.ToolTranscribeAudio) {
		if url := m.audioURL; url != "" {
			// The URL may carry a signature, so the reasoning (kept in telemetry) does not repeat it.
			b.reason("Keyword check (offline simulator, not a language model). This capture is a voice note. " +
				"I need its transcript before I can classify it, so I am calling transcribe_audio.")
			args, _ := jsonw.Marshal(map[string]string{"blob_url": url}) // a string map always encodes
			b.r.audio = m
			b.toolStep([]*toolCall{{id: b.s.cfg.NewID("call"), name: brainwire.ToolTranscribeAudio, arguments: string(args)}}, stageTranscribe)
			b.requiresAction()
			return
		}
	}
	b.classifyAndFile()
}

func (b *builder) classifyAndFile() {
	c := readThread(b.th)
	v, why := b.s.verdict(b.r.classify, c)
	if b.r.magic.noTool || !b.r.offers(brainwire.ToolFileCapture) {
		b.reason(why + " I am answering in text only, without calling file_capture: " + v.Bucket + ", " + v.Status + ".")
		b.complete()
		return
	}
	var calls []*toolCall
	switch {
	case b.r.magic.invalidBucket && !b.r.retried:
		calls = []*toolCall{b.s.fileCall(v, c.fileText, invalidBucket)}
	case b.r.magic.twoCalls && v.Status != brainwire.StatusMisunderstood:
		calls = []*toolCall{b.s.fileCall(v, c.fileText, v.Bucket), b.s.runnerUpCall(v, c.fileText)}
	default:
		calls = []*toolCall{b.s.fileCall(v, c.fileText, v.Bucket)}
	}
	next := fmt.Sprintf(" Title \"%s\". Calling file_capture.", v.Title)
	if len(calls) > 1 {
		next = fmt.Sprintf(" Title \"%s\". Calling file_capture twice: %s, and %s as the runner-up.", v.Title, calls[0].bucket, calls[1].bucket)
	}
	b.reason(why + next)
	b.toolStep(calls, stageFile)
	b.requiresAction()
}

func (s *Simulator) fileCall(v Verdict, text, bucket string) *toolCall {
	a := fileArgs{Text: text, Bucket: bucket, Confidence: v.Confidence, Status: v.Status, Title: v.Title, Question: v.Question}
	return s.newFileCall(a)
}

// runnerUpCall files the second-ranked bucket with its own confidence.
func (s *Simulator) runnerUpCall(v Verdict, text string) *toolCall {
	ranked := rankBuckets(v.Scores)
	total := 0
	for _, n := range v.Scores {
		total += n
	}
	bucket := ranked[1]
	conf := confidence(v.Scores[bucket], total)
	status := brainwire.StatusPending
	if conf >= brainwire.ConfidenceThreshold {
		status = brainwire.StatusClassified
	}
	return s.newFileCall(fileArgs{Text: text, Bucket: bucket, Confidence: conf, Status: status, Title: v.Title})
}

func (s *Simulator) newFileCall(a fileArgs) *toolCall {
	args, _ := jsonw.Marshal(a) // strings and a float always encode
	return &toolCall{id: s.cfg.NewID("call"), name: brainwire.ToolFileCapture, arguments: string(args),
		bucket: a.Bucket, status: a.Status}
}

// reason streams the agent's reasoning; the run's first message honours
// #long:N.
func (b *builder) reason(text string) {
	chunks := splitChunks(text)
	if b.r.magic.long > 0 && !b.r.longDone {
		chunks = fitChunks(chunks, b.r.magic.long)
		b.r.longDone = true
	}
	b.messageStep(chunks)
}

// say streams a short message.
func (b *builder) say(text string) { b.messageStep(splitChunks(text)) }

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
func (b *builder) toolStep(calls []*toolCall, st stage) {
	r := b.r
	step := b.newStep("tool_calls")
	step.StepDetails = foundrywire.StepDetails{Type: "tool_calls", ToolCalls: &[]foundrywire.StepToolCall{}}
	var completion int64
	for _, c := range calls {
		completion += tokens(c.name + c.arguments)
	}
	r.stepUsage = foundrywire.Usage{PromptTokens: r.context, CompletionTokens: completion, TotalTokens: r.context + completion}
	r.context += completion
	r.pending, r.toolStep, r.stage = calls, step, st

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

// explain writes the reasoning behind a verdict.
func explain(v Verdict, c capture) string {
	var sb strings.Builder
	sb.WriteString("Keyword check (offline simulator, not a language model). ")
	newest := c.texts[len(c.texts)-1]
	switch {
	case len(c.texts) > 1:
		fmt.Fprintf(&sb, "Reading the clarification \"%s\" together with the earlier %s \"%s\"; the clarification's cues count double. ",
			quoteText(newest, 80), plural(len(c.texts)-1, "message", "messages"), quoteText(strings.Join(c.texts[:len(c.texts)-1], " / "), 80))
	case c.voice:
		fmt.Fprintf(&sb, "The transcript reads \"%s\". ", quoteText(newest, 80))
	default:
		fmt.Fprintf(&sb, "The capture reads \"%s\". ", quoteText(newest, 80))
	}
	ranked := rankBuckets(v.Scores)
	if len(v.Cues) == 0 {
		sb.WriteString("I see no cue for People, Projects, Ideas or Admin. ")
	}
	for _, bucket := range ranked {
		if v.Scores[bucket] == 0 {
			continue
		}
		var seen []string
		for _, cue := range v.Cues {
			if cue.Bucket == bucket {
				seen = append(seen, `"`+cue.Phrase+`"`)
			}
		}
		fmt.Fprintf(&sb, "Cues for %s: %s (score %d). ", bucket, strings.Join(seen, ", "), v.Scores[bucket])
	}
	second := ranked[1]
	switch v.Status {
	case brainwire.StatusClassified:
		if v.Scores[second] == 0 {
			fmt.Fprintf(&sb, "Only %s has cues, so confidence is %s, at least 0.6: status classified.", v.Bucket, fmtConf(v.Confidence))
		} else {
			fmt.Fprintf(&sb, "%s outweighs %s, so confidence is %s, at least 0.6: status classified.", v.Bucket, second, fmtConf(v.Confidence))
		}
	case brainwire.StatusPending:
		fmt.Fprintf(&sb, "%s leads but %s also fits, so confidence is only %s, below 0.6: status pending, for the person to confirm.",
			v.Bucket, second, fmtConf(v.Confidence))
	default:
		switch v.Reason {
		case ReasonNonWords:
			sb.WriteString("The text is mostly not words, so I cannot file it.")
		case ReasonTooShort:
			sb.WriteString("The text is too short to file with any confidence.")
		default:
			sb.WriteString("Nothing tells me where this belongs.")
		}
		fmt.Fprintf(&sb, " Status misunderstood; best guess %s. I will ask: %s", v.Bucket, v.Question)
	}
	return sb.String()
}

// summarize is the agent's closing message after file_capture answered.
func summarize(calls []*toolCall) string {
	var parts []string
	for _, c := range calls {
		if c.name != brainwire.ToolFileCapture {
			continue
		}
		if bad, why := toolError(c.output); bad {
			parts = append(parts, "I couldn't file this capture ("+why+").")
			continue
		}
		bucket, status := c.bucket, c.status
		var out struct {
			Bucket string `json:"bucket"`
			Status string `json:"status"`
		}
		if json.Unmarshal([]byte(c.output), &out) == nil {
			if out.Bucket != "" {
				bucket = out.Bucket
			}
			if out.Status != "" {
				status = out.Status
			}
		}
		switch status {
		case brainwire.StatusMisunderstood:
			parts = append(parts, "Not filed yet: I asked for a clarification.")
		case brainwire.StatusPending:
			parts = append(parts, "Filed to "+bucket+", pending your review.")
		default:
			parts = append(parts, "Filed to "+bucket+".")
		}
	}
	if len(parts) == 0 {
		return "Done."
	}
	return strings.Join(parts, " ")
}

// toolError reports whether a tool output is an error: a JSON object with
// an "error" member, or plain text that mentions an error.
func toolError(output string) (bool, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(output), &obj); err == nil {
		e, ok := obj["error"]
		if !ok || string(e) == "null" {
			return false, ""
		}
		var code, msg string
		_ = json.Unmarshal(e, &code)
		_ = json.Unmarshal(obj["message"], &msg)
		switch {
		case code != "" && msg != "":
			return true, code + ": " + msg
		case code != "":
			return true, code
		case msg != "":
			return true, msg
		}
		return true, "error"
	}
	if json.Valid([]byte(output)) {
		return false, ""
	}
	if strings.Contains(strings.ToLower(output), "error") {
		return true, quoteText(output, 80)
	}
	return false, ""
}

// parseTranscript reads transcribe_audio's output: {"text": ...}, a JSON
// string, or plain text. A non-empty problem means the tool failed.
func parseTranscript(output string) (transcript, problem string) {
	if bad, why := toolError(output); bad {
		return "", why
	}
	var obj struct {
		Text       *string `json:"text"`
		Transcript *string `json:"transcript"`
	}
	var s string
	switch {
	case json.Unmarshal([]byte(output), &s) == nil:
		return strings.TrimSpace(s), ""
	case json.Unmarshal([]byte(output), &obj) == nil && (obj.Text != nil || obj.Transcript != nil):
		if obj.Text != nil {
			return strings.TrimSpace(*obj.Text), ""
		}
		return strings.TrimSpace(*obj.Transcript), ""
	}
	return strings.TrimSpace(output), ""
}

// splitChunks cuts text into word-ish chunks, each a word with the
// whitespace before it, as the service streams text.
func splitChunks(text string) []string {
	var out []string
	start := 0
	inWord := false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if space && inWord {
			out = append(out, text[start:i])
			start = i
		}
		inWord = !space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// fitChunks returns exactly n chunks: extra ones re-read the capture,
// surplus ones are merged into the last.
func fitChunks(chunks []string, n int) []string {
	filler := splitChunks(" Re-reading the capture to double-check each cue.")
	out := append([]string(nil), chunks...)
	for i := 0; len(out) < n; i++ {
		out = append(out, filler[i%len(filler)])
	}
	if len(out) > n {
		out = append(out[:n-1], strings.Join(out[n-1:], ""))
	}
	return out
}

// splitArgs cuts arguments into fragments of a few characters, never
// inside a UTF-8 sequence, as the service streams them.
func splitArgs(args string) []string {
	sizes := []int{4, 6, 5, 7, 3}
	scale := 1 + utf8.RuneCountInString(args)/240
	var out []string
	runes := []rune(args)
	for i, k := 0, 0; i < len(runes); k++ {
		n := min(sizes[k%len(sizes)]*scale, len(runes)-i)
		out = append(out, string(runes[i:i+n]))
		i += n
	}
	return out
}

// tokens estimates a token count: about four characters per token.
func tokens(s string) int64 { return int64(utf8.RuneCountInString(s)+3) / 4 }

func fmtConf(c float64) string { return strconv.FormatFloat(c, 'f', 2, 64) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
