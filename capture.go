package brainwire

import "time"

// CaptureKind says how a capture came in.
type CaptureKind string

// Capture kinds.
const (
	KindText     CaptureKind = "text"
	KindVoice    CaptureKind = "voice"
	KindFollowUp CaptureKind = "follow_up"
)

// Step names shown on the phone.
const (
	StepClassifying = "Classifying"
	StepProcessing  = "Processing"
)

// Capture is one capture: who sent it, how, under which ids, and what it
// says. The server makes one per request; the adapter, the tools and every
// observer read that same value.
type Capture struct {
	Kind   CaptureKind
	UserID string
	// ThreadID and RunID are the capture's ids, echoed to the phone in
	// COMPLETE; RunID also marks every reasoning chunk.
	ThreadID string
	RunID    string
	// Text is what the person typed: the capture's text, or a follow-up's
	// answer. Empty for voice.
	Text string
	// AudioURL is a voice capture's uploaded audio; transcribe_audio reads
	// no other.
	AudioURL string
	// FollowUp is set on a follow-up: the misunderstood item it answers.
	FollowUp *FollowUp
	// Agent is the agent that runs the capture, as the server knew it
	// when the capture started; zero when the provider cannot describe
	// itself.
	Agent AgentInfo
	// Trace is where telemetry records the capture's agent run, once an
	// observer has started it; the filing keeps it so that a later
	// correction can point at the run.
	Trace TraceRef
	// EvalRunID marks a capture made by `brainwire eval`: the evaluation
	// it belongs to.
	EvalRunID string
}

// FollowUp is what a follow-up capture answers.
type FollowUp struct {
	// Item is the misunderstood inbox item, as it was before the run. The
	// follow-up files onto it and continues its agent conversation.
	Item InboxItem
	// Round is follow_up_round: 1, 2, ...
	Round int
	// ClaimToken names the claim on the round this follow-up holds
	// (FollowUpClaim.Token); its filing carries it.
	ClaimToken string
}

// Step is the step name the phone shows while the capture runs.
func (c Capture) Step() string {
	if c.Kind == KindVoice {
		return StepProcessing
	}
	return StepClassifying
}

// Source is how the capture came in, as its inbox item records it: a
// follow-up refiles an item, which keeps its own source.
func (c Capture) Source() CaptureKind {
	if c.FollowUp != nil {
		return c.FollowUp.Item.Source
	}
	if c.Kind == KindVoice {
		return KindVoice
	}
	return KindText
}

// RawText is the person's words as a filing stores them: the typed text,
// or for a follow-up the item's text followed by the answer. Empty for
// voice, whose words are the transcript.
func (c Capture) RawText() string {
	if c.FollowUp != nil {
		return c.FollowUp.Item.RawText + "\n" + c.Text
	}
	return c.Text
}

// UpstreamThreadID is the agent conversation the run continues (a
// follow-up's), or "" when the run starts a new one.
func (c Capture) UpstreamThreadID() string {
	if c.FollowUp != nil {
		return c.FollowUp.Item.UpstreamThreadID
	}
	return ""
}

// Outcome is what became of a capture. It has one spelling everywhere
// (telemetry, logs, recordings); each phone protocol names it in its own
// words.
type Outcome string

// Outcomes. Classified, LowConfidence and Misunderstood mean file_capture
// filed the capture; an unresolved capture is kept as an item for a person
// to file, unless it was a follow-up.
const (
	OutcomeClassified    Outcome = "classified"
	OutcomeLowConfidence Outcome = "low_confidence" // the person picks the bucket
	OutcomeMisunderstood Outcome = "misunderstood"  // the agent asks a question
	OutcomeUnresolved    Outcome = "unresolved"     // the run ended without a filing
	OutcomeError         Outcome = "error"          // the phone got ERROR
)

// Outcomes lists every outcome, in the order dashboards show them.
var Outcomes = []Outcome{OutcomeClassified, OutcomeLowConfidence, OutcomeMisunderstood, OutcomeUnresolved, OutcomeError}

// Filed reports whether the outcome is a filing.
func (o Outcome) Filed() bool {
	return o == OutcomeClassified || o == OutcomeLowConfidence || o == OutcomeMisunderstood
}

// Resolved reports whether the outcome put the capture in a bucket:
// classified, or low confidence for the person to confirm. A misunderstood
// capture is filed, but in no bucket yet.
func (o Outcome) Resolved() bool {
	return o == OutcomeClassified || o == OutcomeLowConfidence
}

// OutcomeOfStatus is the outcome an inbox item's status stands for, or ""
// for an unknown status.
func OutcomeOfStatus(status string) Outcome {
	switch status {
	case StatusClassified:
		return OutcomeClassified
	case StatusPending:
		return OutcomeLowConfidence
	case StatusMisunderstood:
		return OutcomeMisunderstood
	case StatusUnresolved:
		return OutcomeUnresolved
	}
	return ""
}

// CaptureResult is how a capture ended: what the phone was told and what
// the agent's run did. The adapter builds it from the run's events; every
// observer reads it at the end instead of working it out again.
type CaptureResult struct {
	// Outcome is "" until the phone has been told one.
	Outcome Outcome
	// InboxItemID, Bucket and Confidence are what file_capture filed;
	// Question is a misunderstood capture's clarifying question. An
	// unresolved capture's InboxItemID is the item the server kept it as
	// (StatusUnresolved), "" when that could not be stored or the capture
	// was a follow-up.
	InboxItemID string
	Bucket      string
	Confidence  float64
	Question    string
	// ReasoningChunks counts the chain-of-thought chunks.
	ReasoningChunks int
	// UpstreamThreadID and UpstreamRunID are the agent service's ids of
	// the conversation and the run, once known.
	UpstreamThreadID string
	UpstreamRunID    string
	// RunStatus is the last state of the upstream run seen.
	RunStatus RunStatus
	// Usage sums the token usage the run reported; HasUsage says whether
	// it reported any.
	Usage    Usage
	HasUsage bool
	// ErrorType says why the capture failed, for metrics: "timeout",
	// "canceled", an upstream error code, an application error code...;
	// "" when it did not fail. A failure after the outcome was sent has a
	// type but no ERROR.
	ErrorType string
	// ErrorMessage is what the phone was told in ERROR.
	ErrorMessage string
	// Err is the provider's final error, if its stream ended in one.
	Err error
	// TimeToOutcome is how long after the capture started the phone got
	// its outcome (or ERROR), by the server's clock.
	TimeToOutcome time.Duration
}

// HasConfidence reports whether Confidence is the agent's: the capture was
// filed.
func (r *CaptureResult) HasConfidence() bool { return r.Outcome.Filed() }

// CaptureEventType is the type of a protocol-neutral capture event.
type CaptureEventType uint8

// Capture events, in the order a capture produces them: StepStart, StepEnd,
// at most one Outcome, Complete; or on failure StepStart, [StepEnd], Error,
// Complete. Reasoning and tool events interleave anywhere before Complete;
// each protocol decides which of them its clients see (the phone's see
// none).
const (
	CaptureStepStart CaptureEventType = iota + 1
	CaptureStepEnd
	CaptureOutcome
	CaptureError
	CaptureComplete
	CaptureReasoning
	// CaptureToolCall is a tool call the agent asked for, before it runs.
	CaptureToolCall
	// CaptureToolResult is what a tool returned, before the agent sees it;
	// a filing's Outcome follows it.
	CaptureToolResult
)

func (t CaptureEventType) String() string {
	switch t {
	case CaptureStepStart:
		return "step_start"
	case CaptureStepEnd:
		return "step_end"
	case CaptureOutcome:
		return "outcome"
	case CaptureError:
		return "error"
	case CaptureComplete:
		return "complete"
	case CaptureReasoning:
		return "reasoning"
	case CaptureToolCall:
		return "tool_call"
	case CaptureToolResult:
		return "tool_result"
	}
	return "unknown"
}

// CaptureEvent is one protocol-neutral event of a capture; encoders turn it
// into the bytes of one wire protocol. Type says which fields are set.
type CaptureEvent struct {
	Type CaptureEventType

	StepName string // StepStart, StepEnd
	// Result is the capture's result as of an Outcome or Error event: on
	// an Outcome, Outcome, InboxItemID, Bucket, Confidence, Question and
	// UpstreamThreadID are set; on an Error, ErrorType and ErrorMessage.
	// It belongs to the adapter: read it during the call, never keep it.
	Result  *CaptureResult
	Message string // Error
	// Code is the Error's code for clients, one of a closed set every
	// protocol sends alike (adapter.ErrorCode); ErrorType is telemetry's.
	Code string
	// RetryAfter is how long a busy service asked to wait (Error with
	// code busy), when it said.
	RetryAfter time.Duration
	// ThreadID and RunID are the capture's ids (Outcome, Complete).
	ThreadID string
	RunID    string
	Chunk    ReasoningChunk // Reasoning
	// Tool is the call (ToolCall), or the call a result answers
	// (ToolResult); ToolResult is what the tool returned (ToolResult).
	Tool       *ToolCall
	ToolResult *ToolResult
}

// ReasoningChunk is one piece of the agent's text, numbered consecutively
// from 0 across the whole capture run. Up to the outcome it is the agent's
// chain-of-thought; after it, the agent's closing words (AfterOutcome).
// Telemetry records every chunk alike.
type ReasoningChunk struct {
	RunID            string // the capture's run id (what COMPLETE carries)
	Index            int
	Text             string
	UpstreamRunID    string
	UpstreamThreadID string
	// AfterOutcome is set on text that came once the outcome was sent:
	// what the agent says to the person about it, not how it got there.
	AfterOutcome bool
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up, as clients
// are told it; 0 when the service did not say.
func (ev *CaptureEvent) RetryAfterSeconds() int64 {
	return int64((ev.RetryAfter + time.Second - 1) / time.Second)
}
