package floor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/responses/responseswire"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sse"
	"github.com/brainwire/brainwire/tools"
)

// maxToolRounds bounds the tool rounds of one run, as serve's providers
// do.
const maxToolRounds = 16

// upstream makes the calls to the agent service.
type upstream struct {
	client *http.Client
	auth   string // the Authorization header
}

// post sends a JSON body and returns the response if it is a success;
// any other status is an error with the start of its body.
func (u *upstream) post(ctx context.Context, target string, body []byte, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", u.auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return resp, nil
}

// errFailed is what a stream's handler returns for an event that says
// the call failed: the stream is read on to its end all the same.
var errFailed = errors.New("failed")

// stream makes a streamed call and hands each event to on, by name, until
// on says the call ended well (done) or the stream ends. A stream that ends
// before, or that said the call failed, is an error.
func (u *upstream) stream(ctx context.Context, target string, body []byte, on func(name string, data []byte) (done bool, err error)) error {
	resp, err := u.post(ctx, target, body, "text/event-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	events := sse.NewReader(resp.Body)
	done, failed := false, ""
	for {
		ev, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the events: %w", err)
		}
		ok, err := on(string(ev.Name), ev.Data)
		switch {
		case errors.Is(err, errFailed):
			failed = string(ev.Name)
		case err != nil:
			return err
		}
		done = done || ok
	}
	switch {
	case failed != "":
		return fmt.Errorf("the agent service sent %s", failed)
	case !done:
		return errors.New("the stream ended before the call did")
	}
	return nil
}

// toolDefinition is file_capture's definition, as serve offers it to a
// text capture.
func toolDefinition() (brainwire.ToolDefinition, error) {
	for _, d := range tools.Definitions() {
		if d.Name == fileCapture {
			return d, nil
		}
	}
	return brainwire.ToolDefinition{}, errors.New("no file_capture among the tool definitions")
}

// threads speaks the threads/runs API, as serve's foundry provider does.
type threads struct {
	up      *upstream
	project string // the project endpoint
	tools   []any
}

func newThreads(up *upstream, base string) (*threads, error) {
	def, err := toolDefinition()
	if err != nil {
		return nil, err
	}
	return &threads{up: up, project: base + simulator.ProjectPath, tools: []any{map[string]any{"type": "function",
		"function": map[string]any{"name": def.Name, "description": def.Description, "parameters": def.Parameters}}}}, nil
}

// query is the api-version serve sends.
const query = "?api-version=" + foundry.DefaultAPIVersion

func (t *threads) converse(ctx context.Context, c *capture) error {
	body := jsonText(map[string]any{"assistant_id": simulator.DefaultAgentID,
		"thread": map[string]any{"messages": []any{map[string]string{"role": "user", "content": c.text}}},
		"tools":  t.tools, "stream": true})
	what, target := "creating the thread and run", t.project+"/threads/runs"+query
	for round := 0; ; round++ {
		run, err := t.stream(ctx, target, body)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if run == nil {
			return nil // completed
		}
		switch {
		case round == maxToolRounds:
			return fmt.Errorf("run %s asked for tools %d times", run.ID, round+1)
		case run.RequiredAction == nil || len(run.RequiredAction.SubmitToolOutputs.ToolCalls) == 0:
			return fmt.Errorf("run %s requires action but asked for no function calls", run.ID)
		}
		calls := make([]toolCall, len(run.RequiredAction.SubmitToolOutputs.ToolCalls))
		for i, tc := range run.RequiredAction.SubmitToolOutputs.ToolCalls {
			calls[i] = toolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
		outputs, err := c.file(calls, run.ThreadID)
		if err != nil {
			return err
		}
		submitted := make([]map[string]string, len(outputs))
		for i, out := range outputs {
			submitted[i] = map[string]string{"tool_call_id": calls[i].ID, "output": out}
		}
		body = jsonText(map[string]any{"tool_outputs": submitted, "stream": true})
		what = "submitting the tool outputs of run " + run.ID
		target = t.project + "/threads/" + url.PathEscape(run.ThreadID) + "/runs/" + url.PathEscape(run.ID) + "/submit_tool_outputs" + query
	}
}

// stream makes one streamed call and reads it to its end: the run
// waiting for tool outputs, or nil when it completed.
func (t *threads) stream(ctx context.Context, target string, body []byte) (*foundrywire.RunState, error) {
	var run *foundrywire.RunState
	err := t.up.stream(ctx, target, body, func(name string, data []byte) (bool, error) {
		switch name {
		case "thread.run.requires_action":
			run = new(foundrywire.RunState)
			if err := json.Unmarshal(data, run); err != nil {
				return false, fmt.Errorf("reading %s: %w", name, err)
			}
			return true, nil
		case "thread.run.completed":
			return true, nil
		case "thread.run.failed", "thread.run.cancelled", "thread.run.expired", "thread.run.incomplete", "error":
			return false, errFailed
		}
		return false, nil
	})
	return run, err
}

// responses speaks the Responses API, as serve's responses provider does
// with an agent it defines (model, instructions, tools) and conversations.
type responses struct {
	up    *upstream
	base  string // the Responses API's base URL
	tools []any
}

func newResponses(up *upstream, base string) (*responses, error) {
	def, err := toolDefinition()
	if err != nil {
		return nil, err
	}
	return &responses{up: up, base: base + simulator.ProjectPath + "/openai/v1", tools: []any{map[string]any{"type": "function",
		"name": def.Name, "description": def.Description, "parameters": def.Parameters, "strict": false}}}, nil
}

func (r *responses) converse(ctx context.Context, c *capture) error {
	conv, err := r.conversation(ctx)
	if err != nil {
		return fmt.Errorf("creating a conversation: %w", err)
	}
	input := []any{map[string]string{"type": "message", "role": "user", "content": c.text}}
	for round := 0; ; round++ {
		calls, err := r.stream(ctx, r.request(input, conv))
		if err != nil {
			return fmt.Errorf("creating a response: %w", err)
		}
		if len(calls) == 0 {
			return nil
		}
		if round == maxToolRounds {
			return fmt.Errorf("the agent asked for tools %d times", round+1)
		}
		outputs, err := c.file(calls, conv)
		if err != nil {
			return err
		}
		input = input[:0]
		for i, out := range outputs {
			input = append(input, map[string]string{"type": "function_call_output", "call_id": calls[i].ID, "output": out})
		}
	}
}

// request is a streamed request's body: serve's default reasoning summary
// is auto.
func (r *responses) request(input []any, conv string) []byte {
	return jsonText(map[string]any{"model": simulator.DefaultModel, "instructions": instructions.Default().Text,
		"input": input, "tools": r.tools, "reasoning": map[string]string{"summary": "auto"}, "conversation": conv,
		"store": true, "stream": true})
}

// conversation creates the capture's conversation.
func (r *responses) conversation(ctx context.Context) (string, error) {
	resp, err := r.up.post(ctx, r.base+"/conversations", []byte(`{}`), "application/json")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var conv struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&conv); err != nil {
		return "", fmt.Errorf("reading the conversation: %w", err)
	}
	if conv.ID == "" {
		return "", errors.New("the conversation has no id")
	}
	return conv.ID, nil
}

// stream makes one streamed call and reads it to its end: the function
// calls the response asked for.
func (r *responses) stream(ctx context.Context, body []byte) ([]toolCall, error) {
	var calls []toolCall
	err := r.up.stream(ctx, r.base+"/responses", body, func(name string, data []byte) (bool, error) {
		switch name {
		case "response.output_item.done":
			// Only function calls matter; other items (reasoning,
			// messages) are not decoded.
			if !bytes.Contains(data, []byte(`"function_call"`)) {
				return false, nil
			}
			var done struct {
				Item responseswire.FunctionCallItem
			}
			if err := json.Unmarshal(data, &done); err != nil {
				return false, fmt.Errorf("reading %s: %w", name, err)
			}
			if it := done.Item; it.Type == "function_call" {
				calls = append(calls, toolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
			}
		case "response.completed":
			return true, nil
		case "response.failed", "response.incomplete", "error":
			return false, errFailed
		}
		return false, nil
	})
	return calls, err
}
