package agent

import (
	"context"
	"sync"

	"github.com/brainwire/brainwire"
)

// CallTools runs one round of the agent's tool calls on set, as the loop
// does when a response asks for tools, and returns the results in the
// order of calls. Each result answers its call: it carries the call's id
// and name.
//
// Calls to different tools run concurrently; calls to the same tool run one
// after another, in the order the agent made them. So a round has one
// outcome whatever the timing: when the agent calls file_capture twice, the
// first call in its order files the capture and the second gets the error
// already_filed, whichever provider ran the agent.
//
// A tool that panics, or a nil set, gives the agent an error result like
// any failed tool: a tool bug never takes the server down.
func CallTools(ctx context.Context, set brainwire.ToolSet, calls []brainwire.ToolCall) []brainwire.ToolResult {
	results := make([]brainwire.ToolResult, len(calls))
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
					results[i] = brainwire.ToolResult{CallID: calls[i].ID, Name: calls[i].Name, IsError: true, ErrorCode: "canceled",
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

func callTool(ctx context.Context, set brainwire.ToolSet, call brainwire.ToolCall) (res brainwire.ToolResult) {
	defer func() {
		if v := recover(); v != nil {
			res = brainwire.ToolResult{Output: `{"error":"tool_failed","message":"the tool crashed"}`, IsError: true, ErrorCode: "tool_failed"}
		}
		// The result answers its call, whatever the tool said.
		res.CallID, res.Name = call.ID, call.Name
	}()
	if set == nil {
		return brainwire.ToolResult{Output: `{"error":"unknown_tool","message":"no tools are available"}`, IsError: true, ErrorCode: "unknown_tool"}
	}
	return set.Call(ctx, call)
}
