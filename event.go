package brainwire

// EventKind says what a normalized provider event carries.
type EventKind uint8

// The normalized, provider-neutral events. A provider turns its upstream wire
// protocol into these, and the agent loop adds the results of the tools it
// ran; nothing downstream knows which agent service ran.
const (
	EventTextChunk  EventKind = iota + 1 // a piece of the agent's text (chain-of-thought)
	EventToolCall                        // the agent asked for a tool; the agent loop runs it
	EventToolResult                      // a tool the agent loop ran has returned
	EventUsage                           // token usage of one upstream response; a run's usage is their sum
	EventRunStatus                       // the upstream run changed state
	EventError                           // the upstream reported an error in-stream
)

func (k EventKind) String() string {
	switch k {
	case EventTextChunk:
		return "text_chunk"
	case EventToolCall:
		return "tool_call"
	case EventToolResult:
		return "tool_result"
	case EventUsage:
		return "usage"
	case EventRunStatus:
		return "run_status"
	case EventError:
		return "error"
	}
	return "unknown"
}

// RunStatus is the upstream run's state, in the Foundry vocabulary.
type RunStatus string

// Run states. Terminal ones end the run.
const (
	RunQueued         RunStatus = "queued"
	RunInProgress     RunStatus = "in_progress"
	RunRequiresAction RunStatus = "requires_action"
	RunCancelling     RunStatus = "cancelling"
	RunCancelled      RunStatus = "cancelled"
	RunFailed         RunStatus = "failed"
	RunCompleted      RunStatus = "completed"
	RunIncomplete     RunStatus = "incomplete"
	RunExpired        RunStatus = "expired"
)

// Terminal reports whether no further events follow this state.
func (s RunStatus) Terminal() bool {
	switch s {
	case RunCancelled, RunFailed, RunCompleted, RunIncomplete, RunExpired:
		return true
	}
	return false
}

// Event is one normalized provider event. Kind says which fields are set.
// ThreadID and RunID are the upstream ids, set on every event once known.
type Event struct {
	Kind     EventKind
	ThreadID string
	RunID    string

	Text   string     // EventTextChunk
	Tool   ToolCall   // EventToolCall, and the call an EventToolResult answers
	Result ToolResult // EventToolResult
	Usage  Usage      // EventUsage
	Status RunStatus  // EventRunStatus

	// ErrorCode and ErrorMessage describe a failed run (EventRunStatus with
	// RunFailed) or an in-stream error (EventError).
	ErrorCode    string
	ErrorMessage string
}

// Usage is a token count.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	// ReasoningTokens are the part of CompletionTokens the model spent
	// reasoning, when the service reports it (the Responses API does).
	ReasoningTokens int64
}
