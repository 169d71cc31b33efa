package brainwire

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

// CaptureEventType is the type of a protocol-neutral capture event.
type CaptureEventType uint8

// Capture events, in the order a capture produces them: StepStart, StepEnd,
// at most one outcome (Classified, LowConfidence, Misunderstood, Unresolved),
// Complete; or on failure StepStart, [StepEnd], Error, Complete. Reasoning
// events interleave anywhere before Complete and never reach the phone.
const (
	CaptureStepStart CaptureEventType = iota + 1
	CaptureStepEnd
	CaptureClassified
	CaptureLowConfidence
	CaptureMisunderstood
	CaptureUnresolved
	CaptureError
	CaptureComplete
	CaptureReasoning
)

func (t CaptureEventType) String() string {
	switch t {
	case CaptureStepStart:
		return "STEP_START"
	case CaptureStepEnd:
		return "STEP_END"
	case CaptureClassified:
		return "CLASSIFIED"
	case CaptureLowConfidence:
		return "LOW_CONFIDENCE"
	case CaptureMisunderstood:
		return "MISUNDERSTOOD"
	case CaptureUnresolved:
		return "UNRESOLVED"
	case CaptureError:
		return "ERROR"
	case CaptureComplete:
		return "COMPLETE"
	case CaptureReasoning:
		return "REASONING"
	}
	return "UNKNOWN"
}

// IsOutcome reports whether t is one of the outcome events.
func (t CaptureEventType) IsOutcome() bool {
	return t >= CaptureClassified && t <= CaptureUnresolved
}

// CaptureEvent is one protocol-neutral event of a capture; encoders turn it
// into the bytes of one wire protocol. Type says which fields are set.
type CaptureEvent struct {
	Type CaptureEventType

	StepName string         // StepStart, StepEnd
	Outcome  Outcome        // Classified, LowConfidence, Misunderstood, Unresolved
	Message  string         // Error
	ThreadID string         // Complete: the capture's thread id
	RunID    string         // Complete: the capture's run id
	Chunk    ReasoningChunk // Reasoning
}

// Outcome is what became of a capture.
type Outcome struct {
	InboxItemID string
	Bucket      string
	Confidence  float64
	// Misunderstood only.
	ThreadID              string // the capture's thread id
	QuestionText          string // the agent's clarifying question
	FoundryConversationID string // upstream thread to continue on follow-up
}

// ReasoningChunk is one piece of the agent's chain-of-thought, numbered
// consecutively from 0 across the whole capture run.
type ReasoningChunk struct {
	RunID            string // the capture's run id (what COMPLETE carries)
	Index            int
	Text             string
	UpstreamRunID    string
	UpstreamThreadID string
}
