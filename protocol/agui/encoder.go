// Package agui speaks AG-UI 1.0 (https://ag-ui.com, @ag-ui/core 1.0.x), the
// protocol standard agent front ends (CopilotKit, the AG-UI dojo, any
// @ag-ui/client HttpAgent) use to drive agent backends: a RunAgentInput in
// (ParseInput), AG-UI events out (Encoder).
//
// A capture streams as:
//
//	RUN_STARTED
//	STEP_STARTED "Classifying" (or "Processing" for voice)
//	  [REASONING_START, REASONING_MESSAGE_START/CONTENT.../END, REASONING_END]  only when asked
//	  TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END, TOOL_CALL_RESULT          per tool the agent ran
//	STEP_FINISHED
//	CUSTOM "brainwire.outcome" {outcome, inboxItemId, bucket, confidence, ...}
//	[STATE_DELTA add /capture]                    when the run's state is an object
//	[TEXT_MESSAGE_START/CONTENT/END]              a misunderstood capture's question
//	[TEXT_MESSAGE_START/CONTENT.../END]           the agent's closing words
//	RUN_FINISHED {result: the outcome}
//
// or, on failure, RUN_STARTED, STEP_STARTED, ..., RUN_ERROR {message, code}.
// Every stream passes @ag-ui/client's event verification: the run is
// opened first and closed last, exactly once, and every message, step and
// tool call is closed before RUN_FINISHED. Frames are `data: <json>\n\n`
// with LF only (the client's parser splits on "\n\n"); optional fields are
// left out, never null; no timestamps, so replays are byte-stable.
package agui

import (
	"strconv"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/jsonw"
)

// OutcomeEvent is the name of the CUSTOM event that carries the outcome.
const OutcomeEvent = "brainwire.outcome"

// StateKey is where the outcome goes in the agent's state.
const StateKey = "capture"

// AG-UI 1.0 event types used here (core@1.0.0 EventType).
const (
	typeRunStarted       = "RUN_STARTED"
	typeRunFinished      = "RUN_FINISHED"
	typeRunError         = "RUN_ERROR"
	typeStepStarted      = "STEP_STARTED"
	typeStepFinished     = "STEP_FINISHED"
	typeTextStart        = "TEXT_MESSAGE_START"
	typeTextContent      = "TEXT_MESSAGE_CONTENT"
	typeTextEnd          = "TEXT_MESSAGE_END"
	typeToolCallStart    = "TOOL_CALL_START"
	typeToolCallArgs     = "TOOL_CALL_ARGS"
	typeToolCallEnd      = "TOOL_CALL_END"
	typeToolCallResult   = "TOOL_CALL_RESULT"
	typeCustom           = "CUSTOM"
	typeStateDelta       = "STATE_DELTA"
	typeReasoningStart   = "REASONING_START"
	typeReasoningMsgOpen = "REASONING_MESSAGE_START"
	typeReasoningContent = "REASONING_MESSAGE_CONTENT"
	typeReasoningMsgEnd  = "REASONING_MESSAGE_END"
	typeReasoningEnd     = "REASONING_END"
)

// Options are what the caller of a run asked for.
type Options struct {
	// Reasoning streams the agent's chain-of-thought as AG-UI reasoning
	// events, one REASONING_MESSAGE_CONTENT per chunk. Off by default:
	// it is long, and the outcome does not need it.
	Reasoning bool
	// State also reports the outcome in the agent's state, as a
	// STATE_DELTA adding /capture. Only for a run whose state is a JSON
	// object: the patch applies to nothing else.
	State bool
}

// Encoder encodes the events of one capture. It keeps what is open
// (step, messages) so that the stream is always well formed; use one per
// capture.
type Encoder struct {
	threadID, runID string
	followUpRound   int
	opts            Options

	started, ended bool
	step           string // the open step, "" when none
	reasoningID    string // the open reasoning message, "" when none
	textID         string // the open text message, "" when none
	// Messages of each kind opened so far, for their ids.
	reasoningMessages, textMessages int

	outcome outcome // the outcome, once sent
}

// outcome is what the stream says about the outcome, copied out of the
// adapter's result (which the Encoder may not keep).
type outcome struct {
	set         bool
	outcome     brainwire.Outcome
	inboxItemID string
	bucket      string
	confidence  float64
	question    string
}

// NewEncoder returns the encoder of capture c's stream. The run's ids are
// c's: ThreadID and RunID echo the RunAgentInput's.
func NewEncoder(c brainwire.Capture, opts Options) *Encoder {
	e := &Encoder{threadID: c.ThreadID, runID: c.RunID, opts: opts}
	if c.FollowUp != nil {
		e.followUpRound = c.FollowUp.Round
	}
	return e
}

// Encode appends the frames ev causes to dst.
func (e *Encoder) Encode(dst []byte, ev brainwire.CaptureEvent) []byte {
	if e.ended {
		return dst
	}
	if !e.started {
		e.started = true
		dst = open(dst, typeRunStarted)
		dst = e.runIDs(dst)
		dst = closeFrame(dst)
	}
	if ev.Type == brainwire.CaptureReasoning {
		return e.text(dst, &ev.Chunk)
	}
	dst = e.closeMessages(dst)
	switch ev.Type {
	case brainwire.CaptureStepStart:
		dst = e.closeStep(dst)
		e.step = ev.StepName
		dst = open(dst, typeStepStarted)
		dst = stringField(dst, "stepName", ev.StepName)
		dst = closeFrame(dst)
	case brainwire.CaptureStepEnd:
		dst = e.closeStep(dst)
	case brainwire.CaptureToolCall:
		dst = e.toolCall(dst, ev.Tool)
	case brainwire.CaptureToolResult:
		dst = e.toolResult(dst, ev.Tool, ev.ToolResult)
	case brainwire.CaptureOutcome:
		dst = e.sendOutcome(dst, ev.Result)
	case brainwire.CaptureError:
		// RUN_ERROR ends the run where it stopped: the messages are
		// closed above, so the client keeps them whole; the step is left
		// open, as the run failed in it (the client allows that).
		e.ended = true
		dst = open(dst, typeRunError)
		dst = stringField(dst, "message", ev.Message)
		if ev.Code != "" {
			dst = stringField(dst, "code", ev.Code)
		}
		if n := ev.RetryAfterSeconds(); n > 0 {
			// RUN_ERROR has no field of its own for it: the event's
			// metadata is where AG-UI takes what is the sender's own.
			dst = jsonw.Field(dst, "metadata", false)
			dst = append(dst, '{')
			dst = jsonw.Field(dst, "retryAfterSeconds", true)
			dst = append(strconv.AppendInt(dst, n, 10), '}')
		}
		dst = closeFrame(dst)
	case brainwire.CaptureComplete:
		e.ended = true
		dst = e.closeStep(dst)
		dst = open(dst, typeRunFinished)
		dst = e.runIDs(dst)
		if e.outcome.set {
			dst = jsonw.Field(dst, "result", false)
			dst = e.outcomeValue(dst)
		}
		dst = closeFrame(dst)
	}
	return dst
}

// text streams one chunk of the agent's text: its closing words always,
// its reasoning only when asked for.
func (e *Encoder) text(dst []byte, ch *brainwire.ReasoningChunk) []byte {
	if ch.AfterOutcome {
		dst = e.closeReasoning(dst)
		if e.textID == "" {
			e.textID = e.nextMessageID("text")
			dst = openText(dst, e.textID)
		}
		dst = open(dst, typeTextContent)
		dst = stringField(dst, "messageId", e.textID)
		dst = stringField(dst, "delta", ch.Text)
		return closeFrame(dst)
	}
	if !e.opts.Reasoning {
		return dst
	}
	dst = e.closeText(dst)
	if e.reasoningID == "" {
		// One id for the span and its message: the client tracks them
		// apart, and the reducer keys the message by it.
		e.reasoningID = e.nextMessageID("reasoning")
		dst = open(dst, typeReasoningStart)
		dst = stringField(dst, "messageId", e.reasoningID)
		dst = closeFrame(dst)
		dst = open(dst, typeReasoningMsgOpen)
		dst = stringField(dst, "messageId", e.reasoningID)
		dst = stringField(dst, "role", "reasoning")
		dst = closeFrame(dst)
	}
	dst = open(dst, typeReasoningContent)
	dst = stringField(dst, "messageId", e.reasoningID)
	dst = stringField(dst, "delta", ch.Text)
	return closeFrame(dst)
}

// toolCall sends a call whole: the arguments arrive complete.
func (e *Encoder) toolCall(dst []byte, call *brainwire.ToolCall) []byte {
	if call == nil {
		return dst
	}
	dst = open(dst, typeToolCallStart)
	dst = stringField(dst, "toolCallId", call.ID)
	dst = stringField(dst, "toolCallName", call.Name)
	dst = closeFrame(dst)
	if len(call.Arguments) > 0 {
		dst = open(dst, typeToolCallArgs)
		dst = stringField(dst, "toolCallId", call.ID)
		dst = jsonw.Field(dst, "delta", false)
		dst = jsonw.String(dst, string(call.Arguments))
		dst = closeFrame(dst)
	}
	dst = open(dst, typeToolCallEnd)
	dst = stringField(dst, "toolCallId", call.ID)
	return closeFrame(dst)
}

// toolResult sends what a tool the server ran returned, so the client does
// not take the call for one of its own that is waiting for an answer. A
// failure is described in the content (the tool's error JSON): 1.0 has no
// error field here.
func (e *Encoder) toolResult(dst []byte, call *brainwire.ToolCall, res *brainwire.ToolResult) []byte {
	if call == nil || res == nil {
		return dst
	}
	dst = open(dst, typeToolCallResult)
	// The tool message's own id: new, and never the call's.
	dst = jsonw.Field(dst, "messageId", false)
	dst = jsonw.String(dst, call.ID+"-result")
	dst = stringField(dst, "toolCallId", call.ID)
	dst = stringField(dst, "content", res.Output)
	dst = stringField(dst, "role", "tool")
	return closeFrame(dst)
}

func (e *Encoder) sendOutcome(dst []byte, r *brainwire.CaptureResult) []byte {
	if r == nil || e.outcome.set {
		return dst
	}
	e.outcome = outcome{set: true, outcome: r.Outcome, inboxItemID: r.InboxItemID, bucket: r.Bucket, question: r.Question}
	if r.HasConfidence() {
		e.outcome.confidence = r.Confidence
	}
	dst = e.closeStep(dst)
	dst = open(dst, typeCustom)
	dst = stringField(dst, "name", OutcomeEvent)
	dst = jsonw.Field(dst, "value", false)
	dst = e.outcomeValue(dst)
	dst = closeFrame(dst)
	if e.opts.State {
		dst = open(dst, typeStateDelta)
		dst = append(dst, `,"delta":[{"op":"add","path":"/`+StateKey+`","value":`...)
		dst = e.outcomeValue(dst)
		dst = append(dst, "}]"...)
		dst = closeFrame(dst)
	}
	if r.Outcome == brainwire.OutcomeMisunderstood && r.Question != "" {
		// The agent's question is what a chat shows and the person
		// answers; it travels in the filing, not in the agent's text.
		id := e.nextMessageID("text")
		dst = openText(dst, id)
		dst = open(dst, typeTextContent)
		dst = stringField(dst, "messageId", id)
		dst = stringField(dst, "delta", r.Question)
		dst = closeFrame(dst)
		dst = closeText(dst, id)
	}
	return dst
}

// outcomeValue appends the outcome object: the CUSTOM event's value, the
// state's /capture and RUN_FINISHED's result.
func (e *Encoder) outcomeValue(dst []byte) []byte {
	o := &e.outcome
	dst = append(dst, `{"outcome":`...)
	dst = jsonw.String(dst, string(o.outcome))
	if o.inboxItemID != "" {
		dst = stringField(dst, "inboxItemId", o.inboxItemID)
	}
	if o.bucket != "" {
		dst = stringField(dst, "bucket", o.bucket)
	}
	if o.outcome.Filed() {
		dst = jsonw.Field(dst, "confidence", false)
		dst = jsonw.Float(dst, o.confidence)
	}
	if o.outcome == brainwire.OutcomeMisunderstood {
		dst = stringField(dst, "questionText", o.question)
		// Which follow-up round this run was: the next run on the same
		// state answers the question as round followUpRound+1.
		dst = jsonw.Field(dst, "followUpRound", false)
		dst = strconv.AppendInt(dst, int64(e.followUpRound), 10)
	}
	return append(dst, '}')
}

// nextMessageID names a new message of the run: unique within the thread
// as long as run ids are, and readable in a debugging UI.
func (e *Encoder) nextMessageID(kind string) string {
	n := &e.textMessages
	if kind == "reasoning" {
		n = &e.reasoningMessages
	}
	*n++
	return e.runID + "-" + kind + "-" + strconv.Itoa(*n)
}

func (e *Encoder) closeMessages(dst []byte) []byte {
	return e.closeText(e.closeReasoning(dst))
}

func (e *Encoder) closeReasoning(dst []byte) []byte {
	if e.reasoningID == "" {
		return dst
	}
	dst = open(dst, typeReasoningMsgEnd)
	dst = stringField(dst, "messageId", e.reasoningID)
	dst = closeFrame(dst)
	dst = open(dst, typeReasoningEnd)
	dst = stringField(dst, "messageId", e.reasoningID)
	dst = closeFrame(dst)
	e.reasoningID = ""
	return dst
}

func (e *Encoder) closeText(dst []byte) []byte {
	if e.textID == "" {
		return dst
	}
	dst = closeText(dst, e.textID)
	e.textID = ""
	return dst
}

func (e *Encoder) closeStep(dst []byte) []byte {
	if e.step == "" {
		return dst
	}
	dst = open(dst, typeStepFinished)
	dst = stringField(dst, "stepName", e.step)
	e.step = ""
	return closeFrame(dst)
}

func (e *Encoder) runIDs(dst []byte) []byte {
	dst = stringField(dst, "threadId", e.threadID)
	return stringField(dst, "runId", e.runID)
}

func openText(dst []byte, id string) []byte {
	dst = open(dst, typeTextStart)
	dst = stringField(dst, "messageId", id)
	dst = stringField(dst, "role", "assistant")
	return closeFrame(dst)
}

func closeText(dst []byte, id string) []byte {
	dst = open(dst, typeTextEnd)
	dst = stringField(dst, "messageId", id)
	return closeFrame(dst)
}

// open starts the frame of an event of type typ.
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
