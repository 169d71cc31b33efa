package responses

import (
	"encoding/json"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/responses/responseswire"
)

// Response is the part of a response object this package reads.
type Response struct {
	ID                string               `json:"id"`
	Status            string               `json:"status"`
	Conversation      json.RawMessage      `json:"conversation"` // {"id": "conv_…"} (or the id alone)
	Error             *ResponseError       `json:"error"`
	IncompleteDetails *IncompleteDetails   `json:"incomplete_details"`
	Usage             *responseswire.Usage `json:"usage"`
	Output            []OutputItem         `json:"output"`
}

// ConversationID returns the id of the conversation the response belongs
// to, or "".
func (r *Response) ConversationID() string {
	if len(r.Conversation) == 0 {
		return ""
	}
	var c struct {
		ID string `json:"id"`
	}
	if jsonv1.Unmarshal(r.Conversation, &c) == nil && c.ID != "" {
		return c.ID
	}
	var id string
	_ = jsonv1.Unmarshal(r.Conversation, &id)
	return id
}

// FunctionCalls returns the response's function call items.
func (r *Response) FunctionCalls() []OutputItem {
	var out []OutputItem
	for _, it := range r.Output {
		if it.Type == "function_call" {
			out = append(out, it)
		}
	}
	return out
}

// ResponseError is why a response failed.
type ResponseError struct {
	Code    lenientString `json:"code"`
	Message lenientString `json:"message"`
}

// IncompleteDetails says why a response ended incomplete
// (max_output_tokens, content_filter, ...).
type IncompleteDetails struct {
	Reason lenientString `json:"reason"`
}

// OutputItem is the part of an output item this package reads: for a
// function call, its call id, name and arguments.
type OutputItem struct {
	Type      string    `json:"type"` // "function_call", "message", "reasoning", ...
	ID        string    `json:"id"`
	CallID    string    `json:"call_id"`
	Name      string    `json:"name"`
	Arguments Arguments `json:"arguments"`
}

// InputItem is one item of a request's input: a message, or the output of
// a function call the previous response asked for.
type InputItem struct {
	Type    string // "message" or "function_call_output"
	Role    string // message: "user" or "developer"
	Content string // message text
	CallID  string // function_call_output
	Output  string // function_call_output: the tool's result (JSON text)
}

// UserMessage returns a message from the person.
func UserMessage(text string) InputItem {
	return InputItem{Type: "message", Role: "user", Content: text}
}

// DeveloperMessage returns instructions for this turn, as a message.
func DeveloperMessage(text string) InputItem {
	return InputItem{Type: "message", Role: "developer", Content: text}
}

// FunctionCallOutput answers the function call callID.
func FunctionCallOutput(callID, output string) InputItem {
	return InputItem{Type: "function_call_output", CallID: callID, Output: output}
}

// MarshalJSON writes the item in its type's shape. Messages always carry
// "type", which Foundry expects at item level.
func (it InputItem) MarshalJSON() ([]byte, error) {
	if it.Type == "function_call_output" {
		return json.Marshal(struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}{it.Type, it.CallID, it.Output})
	}
	return json.Marshal(struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content string `json:"content"`
	}{it.Type, it.Role, it.Content})
}

// FunctionTool is a function tool definition in the Responses API's flat
// shape.
type FunctionTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// FunctionTools returns the definitions as function tools. They are not
// strict: brainwire's schemas have optional members, which strict mode
// does not allow.
func FunctionTools(defs []brainwire.ToolDefinition) []FunctionTool {
	if len(defs) == 0 {
		return nil
	}
	out := make([]FunctionTool, len(defs))
	for i, d := range defs {
		params := d.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out[i] = FunctionTool{Type: "function", Name: d.Name, Description: d.Description, Parameters: params}
	}
	return out
}

// AgentReference names a Foundry agent (and optionally its version).
type AgentReference struct {
	Type    string `json:"type"` // "agent_reference"
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Reasoning asks a reasoning model for summaries of its reasoning.
type Reasoning struct {
	Summary string `json:"summary"` // "auto", "concise" or "detailed"
}

// CreateResponseRequest is the body of POST /responses. Exactly one of
// Model (with Instructions and Tools) and Agent names what answers.
type CreateResponseRequest struct {
	Model string          `json:"model,omitempty"`
	Agent *AgentReference `json:"agent_reference,omitempty"`
	// Instructions are not carried over from a previous response: they
	// go with every request.
	Instructions string         `json:"instructions,omitempty"`
	Input        []InputItem    `json:"input"`
	Tools        []FunctionTool `json:"tools,omitempty"`
	Reasoning    *Reasoning     `json:"reasoning,omitempty"`
	// Conversation and PreviousResponseID continue a conversation; at
	// most one is set.
	Conversation       string `json:"conversation,omitempty"`
	PreviousResponseID string `json:"previous_response_id,omitempty"`
	Store              bool   `json:"store"`
	Stream             bool   `json:"stream"`
}

// Deployment is the part of a Foundry project's deployment object (GET
// {project}/deployments/{name}) the server reads: the rest of
// responseswire.Deployment is left unread, so that a service that
// describes it otherwise still answers a health check.
type Deployment struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	ModelName string `json:"modelName"`
}

// FoundryAgent is the part of a Foundry agent object (GET
// /agents/{name}) or agent version object (GET
// /agents/{name}/versions/{version}) the server reads.
type FoundryAgent struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	FoundryAgentVersion
	// Versions holds the latest version of an agent object.
	Versions *struct {
		Latest *FoundryAgentVersion `json:"latest"`
	} `json:"versions,omitempty"`
}

// FoundryAgentVersion is one version of a Foundry agent: what the agent
// runs with.
type FoundryAgentVersion struct {
	Version    string            `json:"version"`
	Metadata   map[string]string `json:"metadata"`
	Definition struct {
		Kind         string          `json:"kind"`
		Model        string          `json:"model"`
		Instructions *string         `json:"instructions"`
		Tools        json.RawMessage `json:"tools"`
	} `json:"definition"`
}

// Current is the version the object describes: itself for a version
// object, the latest for an agent object.
func (a FoundryAgent) Current() FoundryAgentVersion {
	if a.Versions != nil && a.Versions.Latest != nil && a.Version == "" {
		return *a.Versions.Latest
	}
	return a.FoundryAgentVersion
}
