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
	"github.com/brainwire/brainwire/instructions"
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
		run, err := t.stream(ctx, c, target, body)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if run == nil {
			return nil // completed
		}
		switch {
		case round == maxToolRounds:
			return fmt.Errorf("run %s asked for tools %d times", run.ID, round+1)
		case len(run.RequiredAction.SubmitToolOutputs.ToolCalls) == 0:
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

// requiredRun is the part of thread.run.requires_action's run the floor
// reads.
type requiredRun struct {
	ID             string `json:"id"`
	ThreadID       string `json:"thread_id"`
	RequiredAction struct {
		SubmitToolOutputs struct {
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"submit_tool_outputs"`
	} `json:"required_action"`
}

// stream makes one streamed call and reads it to its end (done): the run
// waiting for tool outputs, or nil when it completed.
func (t *threads) stream(ctx context.Context, c *capture, target string, body []byte) (*requiredRun, error) {
	resp, err := t.up.post(ctx, target, body, "text/event-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	events := sse.NewReader(resp.Body)
	var run *requiredRun
	completed, failed := false, ""
	for {
		ev, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the run's events: %w", err)
		}
		switch string(ev.Name) {
		case "thread.run.requires_action":
			run = new(requiredRun)
			if err := json.Unmarshal(ev.Data, run); err != nil {
				return nil, fmt.Errorf("reading thread.run.requires_action: %w", err)
			}
		case "thread.run.completed":
			completed = true
		case "thread.run.failed", "thread.run.cancelled", "thread.run.expired", "thread.run.incomplete", "error":
			failed = string(ev.Name)
		}
	}
	switch {
	case failed != "":
		return nil, fmt.Errorf("the agent service sent %s", failed)
	case run != nil:
		return run, nil
	case completed:
		return nil, nil
	}
	return nil, errors.New("the stream ended before the run did")
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
		calls, err := r.stream(ctx, c, r.request(input, conv))
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
func (r *responses) stream(ctx context.Context, c *capture, body []byte) ([]toolCall, error) {
	resp, err := r.up.post(ctx, r.base+"/responses", body, "text/event-stream")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	events := sse.NewReader(resp.Body)
	var calls []toolCall
	completed, failed := false, ""
	for {
		ev, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the response's events: %w", err)
		}
		switch string(ev.Name) {
		case "response.output_item.done":
			// Only function calls matter; other items (reasoning,
			// messages) are not decoded.
			if !bytes.Contains(ev.Data, []byte(`"function_call"`)) {
				continue
			}
			var done struct {
				Item struct {
					Type      string `json:"type"`
					CallID    string `json:"call_id"`
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"item"`
			}
			if err := json.Unmarshal(ev.Data, &done); err != nil {
				return nil, fmt.Errorf("reading response.output_item.done: %w", err)
			}
			if it := done.Item; it.Type == "function_call" {
				calls = append(calls, toolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
			}
		case "response.completed":
			completed = true
		case "response.failed", "response.incomplete", "error":
			failed = string(ev.Name)
		}
	}
	switch {
	case failed != "":
		return nil, fmt.Errorf("the agent service sent %s", failed)
	case !completed:
		return nil, errors.New("the stream ended before the response did")
	}
	return calls, nil
}
