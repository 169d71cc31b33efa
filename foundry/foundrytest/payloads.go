package foundrytest

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/brainwire/brainwire/foundry/foundrywire"
)

// CreatedAt is the creation time stamped on built objects (that of the
// recorded run), so payloads are deterministic.
const CreatedAt = 1735945041

// Tool is a function tool as the run object echoes it.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// FileCaptureTool returns the file_capture tool definition.
func FileCaptureTool() Tool {
	return Tool{
		Name:        "file_capture",
		Description: "Files the capture into one of the four buckets.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"text":{"type":"string","description":"The capture text."},` +
			`"bucket":{"type":"string","enum":["People","Projects","Ideas","Admin"]},` +
			`"confidence":{"type":"number","minimum":0,"maximum":1},` +
			`"status":{"type":"string","enum":["classified","pending","misunderstood"]},` +
			`"title":{"type":"string"}},"required":["text","bucket","confidence","status"]}`),
	}
}

// ToolCall is a function call the agent asks for.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON object text
}

// FileCaptureCall returns a file_capture call with realistic arguments.
func FileCaptureCall(id, text, bucket string, confidence float64, status string) ToolCall {
	args := struct {
		Text       string  `json:"text"`
		Bucket     string  `json:"bucket"`
		Confidence float64 `json:"confidence"`
		Status     string  `json:"status"`
		Title      string  `json:"title"`
	}{text, bucket, confidence, status, title(text)}
	return ToolCall{ID: id, Name: "file_capture", Arguments: Encode(args)}
}

func title(text string) string {
	words := strings.Fields(text)
	return strings.Join(words[:min(len(words), 5)], " ")
}

// Usage is a token count.
type Usage struct {
	Prompt, Completion, Total int64
}

// Run builds the objects and events of one run.
type Run struct {
	ID           string
	ThreadID     string
	AssistantID  string
	Model        string
	Instructions string
	Tools        []Tool
	CreatedAt    int64
	// Metadata is the run's key-value pairs, as it was created with.
	Metadata map[string]string
}

// NewRun returns a run of the classifier agent with the file_capture tool.
func NewRun(threadID, runID string) Run {
	return Run{
		ID:           runID,
		ThreadID:     threadID,
		AssistantID:  "asst_classifier",
		Model:        "gpt-4o",
		Instructions: "You are the Classifier. File every capture with file_capture.",
		Tools:        []Tool{FileCaptureTool()},
		CreatedAt:    CreatedAt,
	}
}

// runState is what varies between a run's objects.
type runState struct {
	status    string
	calls     []ToolCall
	lastError *foundrywire.LastError
	usage     *Usage
}

// Object returns the run object in status.
func (r Run) Object(status string) foundrywire.Run {
	return r.object(runState{status: status})
}

func (r Run) at(offset int64) *int64 {
	t := r.CreatedAt + offset
	return &t
}

// toolDef is a function tool as the run object echoes it.
type toolDef struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      bool            `json:"strict"`
	} `json:"function"`
}

func (r Run) object(st runState) foundrywire.Run {
	o := foundrywire.Run{
		ID:                 r.ID,
		Object:             "thread.run",
		CreatedAt:          r.CreatedAt,
		AssistantID:        r.AssistantID,
		ThreadID:           r.ThreadID,
		Status:             st.status,
		ExpiresAt:          r.at(600),
		LastError:          st.lastError,
		Model:              r.Model,
		Instructions:       r.Instructions,
		Tools:              make([]json.RawMessage, len(r.Tools)),
		ToolResources:      json.RawMessage(`{}`),
		Metadata:           json.RawMessage(`{}`),
		Temperature:        1,
		TopP:               1,
		TruncationStrategy: json.RawMessage(`{"type":"auto","last_messages":null}`),
		ResponseFormat:     json.RawMessage(`"auto"`),
		ToolChoice:         json.RawMessage(`"auto"`),
		ParallelToolCalls:  true,
	}
	if r.Metadata != nil {
		o.Metadata = json.RawMessage(Encode(r.Metadata))
	}
	if st.status != "queued" {
		o.StartedAt = r.at(1)
	}
	switch st.status {
	case "cancelled":
		o.CancelledAt = r.at(20)
	case "failed":
		o.FailedAt = r.at(20)
	case "completed":
		o.CompletedAt = r.at(20)
	}
	if st.status == "requires_action" {
		calls := make([]foundrywire.RequiredCall, len(st.calls))
		for i, c := range st.calls {
			calls[i] = foundrywire.RequiredCall{ID: c.ID, Type: "function", Function: foundrywire.FunctionCall{Name: c.Name, Arguments: c.Arguments}}
		}
		o.RequiredAction = &foundrywire.RequiredAction{Type: "submit_tool_outputs", SubmitToolOutputs: foundrywire.SubmitToolOutputs{ToolCalls: calls}}
	}
	if st.usage != nil {
		o.Usage = &foundrywire.Usage{PromptTokens: st.usage.Prompt, CompletionTokens: st.usage.Completion, TotalTokens: st.usage.Total}
	}
	for i, t := range r.Tools {
		var d toolDef
		d.Type = "function"
		d.Function.Name, d.Function.Description, d.Function.Parameters = t.Name, t.Description, t.Parameters
		o.Tools[i] = json.RawMessage(Encode(d))
	}
	return o
}

func (r Run) event(name string, st runState) Event {
	return Event{Name: name, Data: Encode(r.object(st))}
}

// ThreadCreated is the thread.created event of the run's thread.
func (r Run) ThreadCreated() Event {
	return Event{Name: "thread.created", Data: Encode(foundrywire.Thread{
		ID: r.ThreadID, Object: "thread", CreatedAt: r.CreatedAt,
		Metadata: json.RawMessage(`{}`), ToolResources: json.RawMessage(`{}`),
	})}
}

// Created is thread.run.created (the run is queued).
func (r Run) Created() Event { return r.event("thread.run.created", runState{status: "queued"}) }

// Queued is thread.run.queued.
func (r Run) Queued() Event { return r.Status("queued") }

// InProgress is thread.run.in_progress.
func (r Run) InProgress() Event { return r.Status("in_progress") }

// Cancelled is thread.run.cancelled.
func (r Run) Cancelled() Event { return r.Status("cancelled") }

// Expired is thread.run.expired.
func (r Run) Expired() Event { return r.Status("expired") }

// Status is thread.run.<status> with the run in that status.
func (r Run) Status(status string) Event {
	return r.event("thread.run."+status, runState{status: status})
}

// RequiresAction is thread.run.requires_action asking for calls.
func (r Run) RequiresAction(calls ...ToolCall) Event {
	return r.event("thread.run.requires_action", runState{status: "requires_action", calls: calls})
}

// Completed is thread.run.completed with the run's usage.
func (r Run) Completed(u Usage) Event {
	return r.event("thread.run.completed", runState{status: "completed", usage: &u})
}

// Failed is thread.run.failed with last_error.
func (r Run) Failed(code, message string) Event {
	return r.event("thread.run.failed", runState{status: "failed", lastError: &foundrywire.LastError{Code: code, Message: message}})
}

func (r Run) message(msgID, status, text string) foundrywire.Message {
	m := foundrywire.Message{
		ID: msgID, Object: "thread.message", CreatedAt: r.CreatedAt + 5,
		AssistantID: &r.AssistantID, ThreadID: r.ThreadID, RunID: &r.ID,
		Status: status, Role: "assistant", Content: []foundrywire.ContentPart{},
		Attachments: []json.RawMessage{}, Metadata: json.RawMessage(`{}`),
	}
	if text != "" {
		m.Content = foundrywire.TextContent(text)
	}
	if status == "completed" {
		m.CompletedAt = r.at(10)
	}
	return m
}

// Message is an assistant message streamed in chunks:
// thread.message.created, in_progress, one delta per chunk, completed.
func (r Run) Message(msgID string, chunks ...string) []Event {
	evs := []Event{
		{Name: "thread.message.created", Data: Encode(r.message(msgID, "in_progress", ""))},
		{Name: "thread.message.in_progress", Data: Encode(r.message(msgID, "in_progress", ""))},
	}
	for i, c := range chunks {
		evs = append(evs, Event{Name: "thread.message.delta", Data: Encode(foundrywire.TextDelta(msgID, c, i == 0))})
	}
	evs = append(evs, Event{Name: "thread.message.completed", Data: Encode(r.message(msgID, "completed", strings.Join(chunks, "")))})
	return evs
}

// MessageDelta is one thread.message.delta carrying text.
func MessageDelta(msgID, text string) Event {
	return Event{Name: "thread.message.delta", Data: Encode(foundrywire.TextDelta(msgID, text, false))}
}

func (r Run) step(stepID, kind, status string, details foundrywire.StepDetails, u *Usage) foundrywire.Step {
	st := foundrywire.Step{
		ID: stepID, Object: "thread.run.step", CreatedAt: r.CreatedAt + 2,
		RunID: r.ID, AssistantID: r.AssistantID, ThreadID: r.ThreadID,
		Type: kind, Status: status, ExpiresAt: r.at(600), StepDetails: details,
	}
	if status == "completed" {
		st.CompletedAt = r.at(10)
	}
	if u != nil {
		st.Usage = &foundrywire.Usage{PromptTokens: u.Prompt, CompletionTokens: u.Completion, TotalTokens: u.Total}
	}
	return st
}

func messageCreation(msgID string) foundrywire.StepDetails {
	return foundrywire.StepDetails{Type: "message_creation", MessageCreation: &foundrywire.MessageCreation{MessageID: msgID}}
}

// MessageStepCreated is the thread.run.step.created of a step creating msgID.
func (r Run) MessageStepCreated(stepID, msgID string) Event {
	return Event{Name: "thread.run.step.created", Data: Encode(r.step(stepID, "message_creation", "in_progress", messageCreation(msgID), nil))}
}

// MessageStepCompleted is the thread.run.step.completed of that step, with
// the step's own usage.
func (r Run) MessageStepCompleted(stepID, msgID string, u Usage) Event {
	return Event{Name: "thread.run.step.completed", Data: Encode(r.step(stepID, "message_creation", "completed", messageCreation(msgID), &u))}
}

// ToolCallStep is a tool-calls step as it streams before requires_action:
// thread.run.step.created, in_progress, then per call a delta with its id
// and name and deltas with fragments of its arguments.
func (r Run) ToolCallStep(stepID string, calls ...ToolCall) []Event {
	empty := foundrywire.StepDetails{Type: "tool_calls", ToolCalls: &[]foundrywire.StepToolCall{}}
	evs := []Event{
		{Name: "thread.run.step.created", Data: Encode(r.step(stepID, "tool_calls", "in_progress", empty, nil))},
		{Name: "thread.run.step.in_progress", Data: Encode(r.step(stepID, "tool_calls", "in_progress", empty, nil))},
	}
	for i, c := range calls {
		evs = append(evs, stepDelta(stepID, foundrywire.CallStart(i, c.ID, c.Name)))
		for _, frag := range fragments(c.Arguments, 6) {
			evs = append(evs, stepDelta(stepID, foundrywire.CallArguments(i, frag)))
		}
	}
	return evs
}

// ToolStepCompleted is the thread.run.step.completed of a tool-calls step
// once outputs were submitted; it opens the submit_tool_outputs stream.
func (r Run) ToolStepCompleted(stepID string, calls []ToolCall, outputs []string, u Usage) Event {
	tcs := make([]foundrywire.StepToolCall, len(calls))
	for i, c := range calls {
		tcs[i] = foundrywire.StepToolCall{ID: c.ID, Type: "function", Function: foundrywire.StepFunction{Name: c.Name, Arguments: c.Arguments}}
		if i < len(outputs) {
			tcs[i].Function.Output = &outputs[i]
		}
	}
	details := foundrywire.StepDetails{Type: "tool_calls", ToolCalls: &tcs}
	return Event{Name: "thread.run.step.completed", Data: Encode(r.step(stepID, "tool_calls", "completed", details, &u))}
}

func stepDelta(stepID string, call foundrywire.DeltaToolCall) Event {
	return Event{Name: "thread.run.step.delta", Data: Encode(foundrywire.ToolDelta(stepID, call))}
}

// fragments splits s into pieces of about n bytes on rune boundaries.
func fragments(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// ErrorEvent is an error event with data as its payload.
func ErrorEvent(data string) Event { return Event{Name: "error", Data: data} }

// Done is the done event that ends every stream.
func Done() Event { return Event{Name: foundrywire.DoneEvent, Data: foundrywire.DoneData} }

// Classify scripts a typical classification: the agent reasons in a
// message, asks for file_capture, and after the output finishes with a
// short reply.
type Classify struct {
	Run       Run
	Reasoning []string // chain-of-thought chunks, one message delta each
	Call      ToolCall
	Output    string   // the tool output echoed by the continuation
	Reply     []string // chunks of the final message
	Usage     Usage    // the run's usage at completion
}

// NewClassify returns a classification of a People capture on a new thread
// with n reasoning chunks.
func NewClassify(threadID, runID string, n int) Classify {
	reasoning := make([]string, n)
	for i := range reasoning {
		reasoning[i] = fmt.Sprintf("Reasoning step %d: the capture mentions a person. ", i)
	}
	return Classify{
		Run:       NewRun(threadID, runID),
		Reasoning: reasoning,
		Call:      FileCaptureCall("call_file_1", "Call Sarah about the offsite", "People", 0.9, "classified"),
		Output:    `{"bucket":"People","confidence":0.9,"item_id":"item_1"}`,
		Reply:     []string{"Filed", " to", " People", "."},
		Usage:     Usage{Prompt: 1200, Completion: 180, Total: 1380},
	}
}

// Stream is the create-run stream: thread.created, the run created,
// queued and in progress, the reasoning message, the tool-call step, and
// requires_action asking for Call, then done.
func (c Classify) Stream() []Event {
	r := c.Run
	evs := []Event{r.ThreadCreated(), r.Created(), r.Queued(), r.InProgress(), r.MessageStepCreated("step_01", "msg_01")}
	evs = append(evs, r.Message("msg_01", c.Reasoning...)...)
	evs = append(evs, r.MessageStepCompleted("step_01", "msg_01", Usage{Prompt: 600, Completion: 120, Total: 720}))
	evs = append(evs, r.ToolCallStep("step_02", c.Call)...)
	return append(evs, r.RequiresAction(c.Call), Done())
}

// Continuation is the submit_tool_outputs stream: the tool step completed,
// queued, in progress, the reply message, completed with Usage, done.
func (c Classify) Continuation() []Event {
	r := c.Run
	evs := []Event{
		r.ToolStepCompleted("step_02", []ToolCall{c.Call}, []string{c.Output}, Usage{Prompt: 300, Completion: 40, Total: 340}),
		r.Queued(), r.InProgress(), r.MessageStepCreated("step_03", "msg_02"),
	}
	evs = append(evs, r.Message("msg_02", c.Reply...)...)
	evs = append(evs, r.MessageStepCompleted("step_03", "msg_02", Usage{Prompt: 300, Completion: 20, Total: 320}))
	return append(evs, r.Completed(c.Usage), Done())
}

// Script is the two calls of the classification on a new thread:
// POST /threads/runs answered by Stream, and submit_tool_outputs answered
// by Continuation.
func (c Classify) Script() []Call {
	return []Call{
		Expect("POST /threads/runs", Stream(c.Stream()...)),
		Expect("POST /threads/"+c.Run.ThreadID+"/runs/"+c.Run.ID+"/submit_tool_outputs", Stream(c.Continuation()...)),
	}
}

// List is a page of a list operation (GET /threads/{t}/runs,
// GET /threads/{t}/messages) holding data, in the order asked for.
func List(data ...any) foundrywire.List {
	l := foundrywire.List{Object: "list", Data: data}
	if data == nil {
		l.Data = []any{}
	}
	return l
}
