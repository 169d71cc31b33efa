// Package v1 encodes capture events in the v1 wire format: the AG-UI-shaped
// stream that earlier builds of the phone app parse on the legacy routes
// (POST /api/ag-ui, /api/ag-ui/follow-up, /api/ag-ui/respond,
// /api/voice-capture). Those builds listen with react-native-sse's
// "message" listener, so every event is one `data: <json>\n\n` frame with
// no `event:` field (a named frame would never reach them), and no
// `retry:` line (it would turn reconnection back on and file twice).
//
// A capture streams as:
//
//	RUN_STARTED {threadId, runId}
//	STEP_STARTED {stepName}
//	STEP_FINISHED {stepName}
//	TEXT_MESSAGE_START, TEXT_MESSAGE_CONTENT {delta: the result text}, TEXT_MESSAGE_END
//	CUSTOM {name, value}       CLASSIFIED, HITL_REQUIRED (low confidence), MISUNDERSTOOD or UNRESOLVED
//	RUN_FINISHED {threadId, runId}
//
// or on failure RUN_STARTED, STEP_STARTED, [STEP_FINISHED], RUN_ERROR
// {message, code} (code is AG-UI's optional field; the same code every
// protocol sends), which those builds also close the stream on. They show the
// TEXT_MESSAGE_CONTENT text when RUN_FINISHED comes, unless HITL_REQUIRED or
// MISUNDERSTOOD asked the person something first; they ignore events they
// do not know, such as RUN_STARTED. Reasoning and tool calls are not part
// of v1.
package v1

import (
	"strconv"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/jsonw"
)

// v1 event types and CUSTOM names, as those builds parse them.
const (
	typeRunStarted   = "RUN_STARTED"
	typeRunFinished  = "RUN_FINISHED"
	typeRunError     = "RUN_ERROR"
	typeStepStarted  = "STEP_STARTED"
	typeStepFinished = "STEP_FINISHED"
	typeTextStart    = "TEXT_MESSAGE_START"
	typeTextContent  = "TEXT_MESSAGE_CONTENT"
	typeTextEnd      = "TEXT_MESSAGE_END"
	typeCustom       = "CUSTOM"

	NameClassified    = "CLASSIFIED"
	NameHITLRequired  = "HITL_REQUIRED"
	NameMisunderstood = "MISUNDERSTOOD"
	NameUnresolved    = "UNRESOLVED"
)

// UnresolvedText is the result text of a capture the agent did not file.
// Those builds show the text as the result when no question was asked.
const UnresolvedText = "Not filed: the agent could not classify this capture."

// Encoder encodes the events of one capture; use one per capture.
type Encoder struct {
	threadID, runID string
	started, ended  bool
}

// NewEncoder returns the encoder of capture c's stream.
func NewEncoder(c brainwire.Capture) *Encoder {
	return &Encoder{threadID: c.ThreadID, runID: c.RunID}
}

// Encode appends the frames ev causes to dst.
func (e *Encoder) Encode(dst []byte, ev brainwire.CaptureEvent) []byte {
	if e.ended {
		return dst
	}
	switch ev.Type {
	case brainwire.CaptureReasoning, brainwire.CaptureToolCall, brainwire.CaptureToolResult:
		return dst
	}
	if !e.started {
		e.started = true
		dst = runEvent(dst, typeRunStarted, e.threadID, e.runID)
	}
	switch ev.Type {
	case brainwire.CaptureStepStart:
		dst = open(dst, typeStepStarted)
		dst = stringField(dst, "stepName", ev.StepName)
		dst = closeFrame(dst)
	case brainwire.CaptureStepEnd:
		dst = open(dst, typeStepFinished)
		dst = stringField(dst, "stepName", ev.StepName)
		dst = closeFrame(dst)
	case brainwire.CaptureOutcome:
		if ev.Result != nil {
			dst = e.outcome(dst, ev.Result)
		}
	case brainwire.CaptureError:
		e.ended = true
		dst = open(dst, typeRunError)
		dst = stringField(dst, "message", ev.Message)
		if ev.Code != "" {
			dst = stringField(dst, "code", ev.Code)
		}
		if n := ev.RetryAfterSeconds(); n > 0 {
			dst = jsonw.Field(dst, "retryAfterSeconds", false)
			dst = strconv.AppendInt(dst, n, 10)
		}
		dst = closeFrame(dst)
	case brainwire.CaptureComplete:
		e.ended = true
		dst = runEvent(dst, typeRunFinished, e.threadID, e.runID)
	}
	return dst
}

// outcome appends the result text, then the CUSTOM event that says what
// to do with it.
func (e *Encoder) outcome(dst []byte, r *brainwire.CaptureResult) []byte {
	var text []byte
	switch r.Outcome {
	case brainwire.OutcomeClassified:
		text = filedText(nil, "Filed → ", r.Bucket, r.Confidence)
	case brainwire.OutcomeLowConfidence:
		text = filedText(nil, "Filed (needs review) → ", r.Bucket, r.Confidence)
	case brainwire.OutcomeMisunderstood:
		text = []byte(r.Question)
	default:
		text = []byte(UnresolvedText)
	}
	dst = textMessage(dst, e.runID+"-result", text)

	dst = open(dst, typeCustom)
	switch r.Outcome {
	case brainwire.OutcomeClassified:
		dst = stringField(dst, "name", NameClassified)
		dst = append(dst, `,"value":{"inboxItemId":`...)
		dst = jsonw.String(dst, r.InboxItemID)
		dst = stringField(dst, "bucket", r.Bucket)
		dst = jsonw.Field(dst, "confidence", false)
		dst = jsonw.Float(dst, r.Confidence)
	case brainwire.OutcomeLowConfidence:
		// Those builds show bucket buttons for HITL_REQUIRED, offering the
		// buckets its questionText names, and need its threadId.
		dst = stringField(dst, "name", NameHITLRequired)
		dst = e.question(dst, r.InboxItemID, string(filedText([]byte("Which bucket does this belong in? Best guess: "), "", r.Bucket, r.Confidence)))
		dst = stringField(dst, "bucket", r.Bucket)
		dst = jsonw.Field(dst, "confidence", false)
		dst = jsonw.Float(dst, r.Confidence)
	case brainwire.OutcomeMisunderstood:
		dst = stringField(dst, "name", NameMisunderstood)
		dst = e.question(dst, r.InboxItemID, r.Question)
	default:
		dst = stringField(dst, "name", NameUnresolved)
		dst = append(dst, `,"value":{"inboxItemId":`...)
		dst = jsonw.String(dst, r.InboxItemID)
	}
	dst = append(dst, '}')
	return closeFrame(dst)
}

// question opens the value of an event that asks the person something.
func (e *Encoder) question(dst []byte, inboxItemID, question string) []byte {
	dst = append(dst, `,"value":{"threadId":`...)
	dst = jsonw.String(dst, e.threadID)
	dst = stringField(dst, "inboxItemId", inboxItemID)
	return stringField(dst, "questionText", question)
}

// Recategorized appends the whole stream that answers /api/ag-ui/respond
// once the person's chosen bucket is filed: the result text and
// CLASSIFIED, as a capture's. The confidence is the agent's and not what
// the person chose, so neither carries one.
func Recategorized(dst []byte, threadID, runID, inboxItemID, bucket string) []byte {
	dst = runEvent(dst, typeRunStarted, threadID, runID)
	dst = textMessage(dst, runID+"-result", []byte("Filed → "+bucket))
	dst = open(dst, typeCustom)
	dst = stringField(dst, "name", NameClassified)
	dst = append(dst, `,"value":{"inboxItemId":`...)
	dst = jsonw.String(dst, inboxItemID)
	dst = stringField(dst, "bucket", bucket)
	dst = append(dst, '}')
	dst = closeFrame(dst)
	return runEvent(dst, typeRunFinished, threadID, runID)
}

// filedText appends prefix, the bucket and the confidence as the result
// text shows them: "Filed → People (0.90)".
func filedText(dst []byte, prefix, bucket string, confidence float64) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, bucket...)
	dst = append(dst, " ("...)
	dst = strconv.AppendFloat(dst, confidence, 'f', 2, 64)
	return append(dst, ')')
}

func textMessage(dst []byte, id string, text []byte) []byte {
	dst = open(dst, typeTextStart)
	dst = stringField(dst, "messageId", id)
	dst = stringField(dst, "role", "assistant")
	dst = closeFrame(dst)
	dst = open(dst, typeTextContent)
	dst = stringField(dst, "messageId", id)
	dst = jsonw.Field(dst, "delta", false)
	dst = jsonw.String(dst, string(text))
	dst = closeFrame(dst)
	dst = open(dst, typeTextEnd)
	dst = stringField(dst, "messageId", id)
	return closeFrame(dst)
}

func runEvent(dst []byte, typ, threadID, runID string) []byte {
	dst = open(dst, typ)
	dst = stringField(dst, "threadId", threadID)
	dst = stringField(dst, "runId", runID)
	return closeFrame(dst)
}

func open(dst []byte, typ string) []byte {
	dst = append(dst, `data: {"type":"`...)
	dst = append(dst, typ...)
	return append(dst, '"')
}

func closeFrame(dst []byte) []byte { return append(dst, "}\n\n"...) }

func stringField(dst []byte, name, v string) []byte {
	dst = jsonw.Field(dst, name, false)
	return jsonw.String(dst, v)
}
