package brainwire

import (
	"context"
	"encoding/json"
	"sync"
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

// CallTools runs one round of the agent's tool calls on set, as every
// provider does when a run asks for tools, and returns the results in the
// order of calls.
//
// Calls to different tools run concurrently; calls to the same tool run one
// after another, in the order the agent made them. So a round has one
// outcome whatever the timing: when the agent calls file_capture twice, the
// first call in its order files the capture and the second gets the error
// already_filed, with every provider.
//
// A tool that panics, or a nil set, gives the agent an error result like
// any failed tool: a tool bug never takes the server down.
func CallTools(ctx context.Context, set ToolSet, calls []ToolCall) []ToolResult {
	results := make([]ToolResult, len(calls))
	if len(calls) == 1 {
		results[0] = callTool(ctx, set, calls[0])
		return results
	}
	// The calls of each tool, by position, in the agent's order.
	var names []string
	byName := map[string][]int{}
	for i, call := range calls {
		if _, ok := byName[call.Name]; !ok {
			names = append(names, call.Name)
		}
		byName[call.Name] = append(byName[call.Name], i)
	}
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			for n, i := range byName[name] {
				if n > 0 && ctx.Err() != nil {
					// The run is over: the calls still waiting their turn
					// are not started.
					results[i] = ToolResult{CallID: calls[i].ID, Name: calls[i].Name, IsError: true, ErrorCode: "canceled",
						Output: `{"error":"canceled","message":"the run ended before this call ran"}`}
					continue
				}
				results[i] = callTool(ctx, set, calls[i])
			}
		})
	}
	wg.Wait()
	return results
}

func callTool(ctx context.Context, set ToolSet, call ToolCall) (res ToolResult) {
	defer func() {
		if v := recover(); v != nil {
			res = ToolResult{Output: `{"error":"tool_failed","message":"the tool crashed"}`, IsError: true, ErrorCode: "tool_failed"}
		}
		if res.CallID == "" {
			res.CallID = call.ID
		}
		if res.Name == "" {
			res.Name = call.Name
		}
	}()
	if set == nil {
		return ToolResult{Output: `{"error":"unknown_tool","message":"no tools are available"}`, IsError: true, ErrorCode: "unknown_tool"}
	}
	return set.Call(ctx, call)
}
