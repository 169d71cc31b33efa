package brainwire

import (
	"context"
	"encoding/json"
)

// Tool names the server executes for the agent.
const (
	ToolFileCapture     = "file_capture"
	ToolTranscribeAudio = "transcribe_audio"
)

// ToolCall is the agent's request to run one tool.
type ToolCall struct {
	ID        string          // upstream tool call id
	Name      string          // function name
	Arguments json.RawMessage // JSON object, as the agent sent it
	ThreadID  string          // upstream thread the call belongs to
	RunID     string          // upstream run the call belongs to
}

// ToolResult is what a tool returned; Output is sent back to the agent.
// The typed fields say the same for the server, so nothing downstream
// parses Output again.
type ToolResult struct {
	CallID  string
	Name    string
	Output  string // JSON text returned to the agent
	IsError bool   // Output describes an error the agent should handle
	// ErrorCode is the error's code ("invalid_bucket", ...) when IsError.
	ErrorCode string
	// Filed is file_capture's result when it filed the capture.
	Filed *FileCaptureResult
	// Superseded is set when file_capture could not file a follow-up
	// because a person changed (EConflict) or deleted (ENotFound) its item
	// while the agent ran: that code. The agent is told only that the
	// filing failed; the client is told why.
	Superseded string
	// Fatal is a failure no answer of the agent can mend (the
	// transcription service failing, the capture's Idempotency-Key taken
	// over by a repeat of its request): the loop ends the run with it
	// once the round's results are told, and the capture ends in it.
	Fatal error
}

// FileCaptureResult is file_capture's answer: the JSON the agent gets, and
// what the phone is told.
type FileCaptureResult struct {
	Bucket     string  `json:"bucket"`
	Confidence float64 `json:"confidence"`
	ItemID     string  `json:"item_id"`
	Status     string  `json:"status"`
	// Question is a misunderstood capture's clarifying question, as the
	// agent asked it; the agent is not sent it back.
	Question string `json:"-"`
}

// DefaultQuestion is asked when the agent marks a capture misunderstood
// without saying what it wants to know.
const DefaultQuestion = "Could you tell me a bit more about what you meant?"

// Result is what the phone is told of the filing f, made in the agent
// conversation upstreamThreadID: the outcome its status stands for
// (unresolved for a status file_capture does not give), the item, bucket
// and confidence, and a misunderstood capture's question.
func (f *FileCaptureResult) Result(upstreamThreadID string) CaptureResult {
	r := CaptureResult{Outcome: OutcomeOfStatus(f.Status), InboxItemID: f.ItemID, Bucket: f.Bucket,
		Confidence: f.Confidence, UpstreamThreadID: upstreamThreadID}
	switch r.Outcome {
	case OutcomeClassified, OutcomeLowConfidence:
	case OutcomeMisunderstood:
		r.Question = f.Question
		if r.Question == "" {
			r.Question = DefaultQuestion
		}
	default:
		r.Outcome = OutcomeUnresolved
	}
	return r
}

// ToolDefinition describes one function tool to the agent.
type ToolDefinition struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON schema of the arguments object
}

// ToolSet is the set of tools one capture offers the agent. Call must be safe
// for concurrent use: a run may ask for several tools at once. Tool failures
// are reported in the ToolResult (IsError) for the agent to handle; only a
// result's Fatal ends the run.
type ToolSet interface {
	Definitions() []ToolDefinition
	Call(ctx context.Context, call ToolCall) ToolResult
}
