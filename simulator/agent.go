package simulator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
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

var hashTagRE = regexp.MustCompile(`#[A-Za-z0-9:-]+`)

func hashTags(text string) []hashTag {
	var out []hashTag
	for _, loc := range hashTagRE.FindAllStringIndex(text, -1) {
		out = append(out, hashTag{tag: strings.ToLower(text[loc[0]:loc[1]]), start: loc[0], end: loc[1]})
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

// newMessage is a message of role, its audio line read when it is the
// person's.
func newMessage(role, text string) *message {
	m := &message{text: text, obj: foundrywire.Message{Role: role}}
	if role == "user" {
		m.audioURL, _ = splitAudio(text)
	}
	return m
}

// newestUser returns the newest user message of msgs, nil when none.
func newestUser(msgs []*message) *message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].obj.Role == "user" {
			return msgs[i]
		}
	}
	return nil
}

// runMemory is what the agent remembers across the turns of one run.
type runMemory struct {
	magic    magic
	stage    stage // what the pending calls are for
	retried  bool  // #invalid-bucket has retried
	longDone bool  // #long:N has shaped the run's first reasoning
	tools    map[string]bool
	noTools  bool // tool_choice "none"
}

func (m *runMemory) offers(tool string) bool { return !m.noTools && m.tools[tool] }

// thought cuts reasoning into chunks; the run's first honours #long:N.
func (m *runMemory) thought(text string) []string {
	chunks := splitChunks(text)
	if m.magic.long > 0 && !m.longDone {
		chunks = fitChunks(chunks, m.magic.long)
		m.longDone = true
	}
	return chunks
}

// face is how one API renders the agent's moves.
type face interface {
	reason(title, text string)     // think aloud
	say(text string)               // answer in text, ending the run
	handOver(calls []*toolCall)    // ask the client to run calls; the run waits
	unfiled(v Verdict, why string) // answer without filing
	callID() string
}

// modelFailer is a face whose model call fails under #fail and
// #error-event once it has classified (the ADK face); the others fail
// the run as it starts.
type modelFailer interface {
	failModel(why string)
}

// agent is the simulated agent's one move, the same on every face: it
// reads the conversation's user messages and transcribes, classifies,
// files or answers, as its run's memory and magic phrases say.
type agent struct {
	s    *Simulator
	cls  *classifier // the run's instructions' rules applied
	mem  *runMemory
	msgs []*message
	face face
}

// think is the agent's first move on a new message: a voice note is
// transcribed first.
func (a *agent) think() {
	if m := newestUser(a.msgs); m != nil && m.transcript == nil && m.audioURL != "" && a.mem.offers(brainwire.ToolTranscribeAudio) {
		// The URL may carry a signature, so the reasoning (kept in telemetry) does not repeat it.
		a.face.reason("Transcribing the voice note", "Keyword check (offline simulator, not a language model). This capture is a voice note. "+
			"I need its transcript before I can classify it, so I am calling transcribe_audio.")
		args, _ := jsonw.Marshal(map[string]string{"blob_url": m.audioURL}) // a string map always encodes
		a.handOver([]*toolCall{{id: a.face.callID(), name: brainwire.ToolTranscribeAudio, arguments: string(args)}}, stageTranscribe)
		return
	}
	a.classifyAndFile()
}

// resume is the agent's move once calls, its pending ones, have their
// outputs.
func (a *agent) resume(calls []*toolCall) {
	if a.mem.stage == stageTranscribe {
		transcript, problem := parseTranscript(calls[0].output)
		if problem != "" {
			a.face.say("I couldn't transcribe the voice note (" + problem + "). Please type the capture instead.")
			return
		}
		if m := newestUser(a.msgs); m != nil { // the voice note
			m.transcript = &transcript
		}
		a.classifyAndFile()
		return
	}
	if a.mem.magic.invalidBucket && !a.mem.retried && len(calls) > 0 && calls[0].bucket == invalidBucket {
		if bad, why := toolError(calls[0].output); bad {
			a.mem.retried = true
			c := readMessages(a.msgs)
			v := a.cls.classify(c.texts)
			a.face.reason("Retrying with a valid bucket", fmt.Sprintf("file_capture rejected the bucket %q (%s): it is not one of People, Projects, Ideas or Admin. "+
				"Retrying with %s, status %s, confidence %s.", invalidBucket, why, v.Bucket, v.Status, fmtConf(v.Confidence)))
			a.handOver([]*toolCall{a.fileCall(v, c.fileText, v.Bucket)}, stageFile)
			return
		}
	}
	a.face.say(summarize(calls))
}

func (a *agent) classifyAndFile() {
	c := readMessages(a.msgs)
	v, why := a.s.verdict(a.cls, c)
	m := a.mem.magic
	if f, ok := a.face.(modelFailer); ok && (m.fail || m.errorEvent) {
		f.failModel(why)
		return
	}
	if m.noTool || !a.mem.offers(brainwire.ToolFileCapture) {
		a.face.unfiled(v, why)
		return
	}
	var calls []*toolCall
	switch {
	case m.invalidBucket && !a.mem.retried:
		calls = []*toolCall{a.fileCall(v, c.fileText, invalidBucket)}
	case m.twoCalls && v.Status != brainwire.StatusMisunderstood:
		calls = []*toolCall{a.fileCall(v, c.fileText, v.Bucket), a.runnerUpCall(v, c.fileText)}
	default:
		calls = []*toolCall{a.fileCall(v, c.fileText, v.Bucket)}
	}
	next := fmt.Sprintf(" Title \"%s\". Calling file_capture.", v.Title)
	if len(calls) > 1 {
		next = fmt.Sprintf(" Title \"%s\". Calling file_capture twice: %s, and %s as the runner-up.", v.Title, calls[0].bucket, calls[1].bucket)
	}
	a.face.reason("Classifying the capture", why+next)
	a.handOver(calls, stageFile)
}

func (a *agent) handOver(calls []*toolCall, st stage) {
	a.mem.stage = st
	a.face.handOver(calls)
}

func (a *agent) fileCall(v Verdict, text, bucket string) *toolCall {
	return a.newFileCall(fileArgs{Text: text, Bucket: bucket, Confidence: v.Confidence, Status: v.Status, Title: v.Title, Question: v.Question})
}

// runnerUpCall files the second-ranked bucket with its own confidence.
func (a *agent) runnerUpCall(v Verdict, text string) *toolCall {
	total := 0
	for _, n := range v.Scores {
		total += n
	}
	bucket := rankBuckets(v.Scores)[1]
	conf := confidence(v.Scores[bucket], total)
	status := brainwire.StatusPending
	if conf >= brainwire.ConfidenceThreshold {
		status = brainwire.StatusClassified
	}
	return a.newFileCall(fileArgs{Text: text, Bucket: bucket, Confidence: conf, Status: status, Title: v.Title})
}

func (a *agent) newFileCall(f fileArgs) *toolCall {
	args, _ := jsonw.Marshal(f) // strings and a float always encode
	return &toolCall{id: a.face.callID(), name: brainwire.ToolFileCapture, arguments: string(args), bucket: f.Bucket, status: f.Status}
}

// unanswered compares the outputs' call ids with the pending calls: the
// ids no pending call has, and the pending calls no output answers.
func unanswered(pending []*toolCall, outputs map[string]string) (unknown, missing []string) {
	want := map[string]bool{}
	for _, c := range pending {
		want[c.id] = true
		if _, ok := outputs[c.id]; !ok {
			missing = append(missing, c.id)
		}
	}
	for id := range outputs {
		if !want[id] {
			unknown = append(unknown, id)
		}
	}
	slices.Sort(unknown)
	return unknown, missing
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
