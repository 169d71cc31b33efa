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
type ToolResult struct {
	CallID  string
	Name    string
	Output  string // JSON text returned to the agent
	IsError bool   // Output describes an error the agent should handle
}

// ToolDefinition describes one function tool to the agent.
type ToolDefinition struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON schema of the arguments object
}

// ToolSet is the set of tools one capture offers the agent. Call must be safe
// for concurrent use: a run may ask for several tools at once. Tool failures
// are reported in the ToolResult (IsError) for the agent to handle; Call never
// fails the run.
type ToolSet interface {
	Definitions() []ToolDefinition
	Call(ctx context.Context, call ToolCall) ToolResult
}
