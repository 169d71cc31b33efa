package brainwire

// AgentEventKind says what a normalized provider event carries.
type AgentEventKind uint8

// The normalized, provider-neutral events. A provider turns its upstream wire
// protocol into these, and the agent loop adds the results of the tools it
// ran; nothing downstream knows which agent service ran.
const (
	AgentTextChunk  AgentEventKind = iota + 1 // a piece of the agent's text (chain-of-thought)
	AgentToolCall                             // the agent asked for a tool; the agent loop runs it
	AgentToolResult                           // a tool the agent loop ran has returned
	AgentUsage                                // token usage of one upstream response; a run's usage is their sum
	AgentRunStatus                            // the upstream run changed state
	AgentError                                // the upstream reported an error in-stream
)

func (k AgentEventKind) String() string {
	switch k {
	case AgentTextChunk:
		return "text_chunk"
	case AgentToolCall:
		return "tool_call"
	case AgentToolResult:
		return "tool_result"
	case AgentUsage:
		return "usage"
	case AgentRunStatus:
		return "run_status"
	case AgentError:
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

// AgentEvent is one normalized provider event. Kind says which fields are set.
// ThreadID and RunID are the upstream ids, set on every event once known.
type AgentEvent struct {
	Kind     AgentEventKind
	ThreadID string
	RunID    string

	Text   string     // AgentTextChunk
	Tool   ToolCall   // AgentToolCall, and the call an AgentToolResult answers
	Result ToolResult // AgentToolResult
	Usage  Usage      // AgentUsage
	Status RunStatus  // AgentRunStatus

	// ErrorCode and ErrorMessage describe a failed run (AgentRunStatus with
	// RunFailed) or an in-stream error (AgentError).
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
