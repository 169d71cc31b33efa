// Package responseswire writes the wire format of the Responses API's
// streams: the response object and its output items, and the events of a
// streamed response in the order the API sends them, numbered from 0.
// Members are in the order of the API's specification; what the service
// sends and the specification leaves open (the obfuscation padding, the
// argument fragments, which members a reasoning item and the arguments'
// done event carry) follows published recordings of OpenAI and Azure
// OpenAI streams. It also writes the objects a health check reads (a
// model, a Foundry project's deployment: objects.go). The simulator's
// Responses face and responsestest write through it.
package responseswire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/brainwire/brainwire/internal/jsonw"
)

// Response is a response object, the payload of the lifecycle events.
type Response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Background         bool              `json:"background"`
	CompletedAt        *int64            `json:"completed_at"`
	Error              *Error            `json:"error"`
	IncompleteDetails  *Incomplete       `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []json.RawMessage `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          Reasoning         `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        Float             `json:"temperature"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	TopP               Float             `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *Usage            `json:"usage"`
	User               *string           `json:"user"`
	Metadata           json.RawMessage   `json:"metadata"`
	Conversation       *ConversationRef  `json:"conversation,omitempty"`
	AgentReference     *AgentReference   `json:"agent_reference,omitempty"`
}

// Reasoning is a response's reasoning configuration.
type Reasoning struct {
	Effort  string  `json:"effort"`
	Summary *string `json:"summary"`
}

// Error is a failed response's error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Incomplete is an incomplete response's incomplete_details.
type Incomplete struct {
	Reason string `json:"reason"`
}

// ConversationRef names the conversation a response belongs to.
type ConversationRef struct {
	ID string `json:"id"`
}

// AgentReference names the Foundry agent a response is from.
type AgentReference struct {
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Usage is a response's token usage.
type Usage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// NewUsage returns the usage of input and output tokens, reasoning of
// them spent on reasoning.
func NewUsage(input, output, reasoning int64) *Usage {
	u := &Usage{InputTokens: input, OutputTokens: output, TotalTokens: input + output}
	u.OutputTokensDetails.ReasoningTokens = reasoning
	return u
}

// Float encodes whole numbers with a decimal point (1.0), as the service
// does for temperature and top_p.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	b := strconv.AppendFloat(nil, float64(f), 'f', -1, 64)
	if !bytes.ContainsAny(b, ".eE") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// The output items, as response.output_item.done and the finished
// response list them.
type (
	// ReasoningItem is a reasoning item; its summary is empty when the
	// reasoning was not summarized.
	ReasoningItem struct {
		ID      string        `json:"id"`
		Type    string        `json:"type"`
		Summary []SummaryText `json:"summary"`
	}
	// MessageItem is an assistant message.
	MessageItem struct {
		ID      string       `json:"id"`
		Type    string       `json:"type"`
		Status  string       `json:"status"`
		Content []OutputText `json:"content"`
		Role    string       `json:"role"`
	}
	// FunctionCallItem is a function call.
	FunctionCallItem struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
	}
	// SummaryText is one part of a reasoning summary.
	SummaryText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	// OutputText is one text part of a message.
	OutputText struct {
		Type        string     `json:"type"`
		Annotations []struct{} `json:"annotations"`
		Logprobs    []struct{} `json:"logprobs"`
		Text        string     `json:"text"`
	}
)

// NewReasoningItem returns a completed reasoning item whose summary is chunks.
func NewReasoningItem(id string, chunks []string) ReasoningItem {
	it := ReasoningItem{ID: id, Type: "reasoning", Summary: []SummaryText{}}
	if len(chunks) > 0 {
		it.Summary = append(it.Summary, summaryText(strings.Join(chunks, "")))
	}
	return it
}

// NewMessageItem returns a completed assistant message whose text is chunks.
func NewMessageItem(id string, chunks []string) MessageItem {
	return MessageItem{ID: id, Type: "message", Status: "completed", Content: []OutputText{outputText(strings.Join(chunks, ""))}, Role: "assistant"}
}

// NewFunctionCallItem returns a completed function call.
func NewFunctionCallItem(id, callID, name, arguments string) FunctionCallItem {
	return FunctionCallItem{ID: id, Type: "function_call", Status: "completed", Arguments: arguments, CallID: callID, Name: name}
}

func summaryText(text string) SummaryText { return SummaryText{Type: "summary_text", Text: text} }

func outputText(text string) OutputText {
	return OutputText{Type: "output_text", Annotations: []struct{}{}, Logprobs: []struct{}{}, Text: text}
}

// Frame is one event of a stream: its type (the SSE event name) and
// data. Paced marks the text deltas the simulator spaces out in time.
type Frame struct {
	Type  string
	Data  []byte
	Paced bool
}

// Stream builds the events of one streamed response, numbering them.
type Stream struct {
	seq    int
	frames []Frame
}

// Frames returns the events built so far.
func (s *Stream) Frames() []Frame { return s.frames }

// event members common to all: the type and the sequence number. The
// events' own members follow, in the specification's order.
type head struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
}

type (
	lifecycle struct {
		head
		Response *Response `json:"response"`
	}
	itemEvent struct {
		head
		OutputIndex int `json:"output_index"`
		Item        any `json:"item"`
	}
	summaryPart struct {
		head
		ItemID       string      `json:"item_id"`
		OutputIndex  int         `json:"output_index"`
		SummaryIndex int         `json:"summary_index"`
		Part         SummaryText `json:"part"`
	}
	summaryDelta struct {
		head
		ItemID       string `json:"item_id"`
		OutputIndex  int    `json:"output_index"`
		SummaryIndex int    `json:"summary_index"`
		Delta        string `json:"delta"`
		Obfuscation  string `json:"obfuscation"`
	}
	summaryDone struct {
		head
		ItemID       string `json:"item_id"`
		OutputIndex  int    `json:"output_index"`
		SummaryIndex int    `json:"summary_index"`
		Text         string `json:"text"`
	}
	contentPart struct {
		head
		ItemID       string     `json:"item_id"`
		OutputIndex  int        `json:"output_index"`
		ContentIndex int        `json:"content_index"`
		Part         OutputText `json:"part"`
	}
	textDelta struct {
		head
		ItemID       string     `json:"item_id"`
		OutputIndex  int        `json:"output_index"`
		ContentIndex int        `json:"content_index"`
		Delta        string     `json:"delta"`
		Logprobs     []struct{} `json:"logprobs"`
		Obfuscation  string     `json:"obfuscation"`
	}
	textDone struct {
		head
		ItemID       string     `json:"item_id"`
		OutputIndex  int        `json:"output_index"`
		ContentIndex int        `json:"content_index"`
		Text         string     `json:"text"`
		Logprobs     []struct{} `json:"logprobs"`
	}
	argumentsDelta struct {
		head
		ItemID      string `json:"item_id"`
		OutputIndex int    `json:"output_index"`
		Delta       string `json:"delta"`
		Obfuscation string `json:"obfuscation"`
	}
	// argumentsDone has no name: the service does not send one.
	argumentsDone struct {
		head
		ItemID      string `json:"item_id"`
		OutputIndex int    `json:"output_index"`
		Arguments   string `json:"arguments"`
	}
	errorEvent struct {
		head
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	}
)

// add numbers and encodes the event ev makes with the next head.
func (s *Stream) add(typ string, paced bool, ev func(head) any) {
	data, err := jsonw.Marshal(ev(head{Type: typ, SequenceNumber: s.seq}))
	if err != nil {
		panic(err) // the event types hold strings, numbers and raw JSON only
	}
	s.seq++
	s.frames = append(s.frames, Frame{Type: typ, Data: data, Paced: paced})
}

// Lifecycle adds response.<status> carrying r: created, in_progress,
// completed, failed, incomplete.
func (s *Stream) Lifecycle(status string, r *Response) {
	s.add("response."+status, false, func(h head) any { return lifecycle{h, r} })
}

// Error adds an error event, which ends a stream in place of a final
// lifecycle event.
func (s *Stream) Error(code, message string) {
	s.add("error", false, func(h head) any { return errorEvent{head: h, Code: code, Message: message} })
}

// Reasoning adds a reasoning item at output index idx whose summary
// arrives in chunks; a reasoning item without chunks has no summary part.
func (s *Stream) Reasoning(idx int, id string, chunks []string) {
	s.add("response.output_item.added", false, func(h head) any {
		return itemEvent{h, idx, ReasoningItem{ID: id, Type: "reasoning", Summary: []SummaryText{}}}
	})
	if len(chunks) > 0 {
		text := strings.Join(chunks, "")
		s.add("response.reasoning_summary_part.added", false, func(h head) any { return summaryPart{h, id, idx, 0, summaryText("")} })
		for _, c := range chunks {
			s.add("response.reasoning_summary_text.delta", true, func(h head) any { return summaryDelta{h, id, idx, 0, c, Obfuscation(c)} })
		}
		s.add("response.reasoning_summary_text.done", false, func(h head) any { return summaryDone{h, id, idx, 0, text} })
		s.add("response.reasoning_summary_part.done", false, func(h head) any { return summaryPart{h, id, idx, 0, summaryText(text)} })
	}
	s.add("response.output_item.done", false, func(h head) any { return itemEvent{h, idx, NewReasoningItem(id, chunks)} })
}

// Message adds an assistant message at output index idx whose text
// arrives in chunks.
func (s *Stream) Message(idx int, id string, chunks []string) {
	text := strings.Join(chunks, "")
	s.add("response.output_item.added", false, func(h head) any {
		return itemEvent{h, idx, MessageItem{ID: id, Type: "message", Status: "in_progress", Content: []OutputText{}, Role: "assistant"}}
	})
	s.add("response.content_part.added", false, func(h head) any { return contentPart{h, id, idx, 0, outputText("")} })
	for _, c := range chunks {
		s.add("response.output_text.delta", true, func(h head) any { return textDelta{h, id, idx, 0, c, []struct{}{}, Obfuscation(c)} })
	}
	s.add("response.output_text.done", false, func(h head) any { return textDone{h, id, idx, 0, text, []struct{}{}} })
	s.add("response.content_part.done", false, func(h head) any { return contentPart{h, id, idx, 0, outputText(text)} })
	s.add("response.output_item.done", false, func(h head) any { return itemEvent{h, idx, NewMessageItem(id, chunks)} })
}

// FunctionCall adds a function call at output index idx whose arguments
// arrive in fragments.
func (s *Stream) FunctionCall(idx int, id, callID, name, arguments string) {
	s.add("response.output_item.added", false, func(h head) any {
		return itemEvent{h, idx, FunctionCallItem{ID: id, Type: "function_call", Status: "in_progress", CallID: callID, Name: name}}
	})
	for _, frag := range Fragments(arguments) {
		s.add("response.function_call_arguments.delta", false, func(h head) any { return argumentsDelta{h, id, idx, frag, Obfuscation(frag)} })
	}
	s.add("response.function_call_arguments.done", false, func(h head) any { return argumentsDone{h, id, idx, arguments} })
	s.add("response.output_item.done", false, func(h head) any { return itemEvent{h, idx, NewFunctionCallItem(id, callID, name, arguments)} })
}

// Obfuscation pads a delta as the service does: to a multiple of 16
// characters with letters and digits (random there, fixed here), nothing
// when the delta already is one.
func Obfuscation(delta string) string {
	const pad = "Zx9q3LmA2bKw7TnR"
	return pad[:(16-utf8.RuneCountInString(delta)%16)%16]
}

// Fragments cuts function arguments into pieces of a few characters,
// token-sized as the service streams them, never inside a UTF-8 sequence.
func Fragments(args string) []string {
	sizes := [...]int{4, 6, 5, 7, 3}
	scale := 1 + utf8.RuneCountInString(args)/240
	var out []string
	for k := 0; args != ""; k++ {
		n, i := sizes[k%len(sizes)]*scale, 0
		for ; n > 0 && i < len(args); n-- {
			_, size := utf8.DecodeRuneInString(args[i:])
			i += size
		}
		out = append(out, args[:i])
		args = args[i:]
	}
	return out
}
