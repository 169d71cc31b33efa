package foundrytest

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
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
	args := Object{
		{"text", text},
		{"bucket", bucket},
		{"confidence", confidence},
		{"status", status},
		{"title", title(text)},
	}
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

func (u Usage) object() Object {
	return Object{{"prompt_tokens", u.Prompt}, {"completion_tokens", u.Completion}, {"total_tokens", u.Total}}
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
	lastError *Object
	usage     *Usage
}

// Object returns the run object in status.
func (r Run) Object(status string) Object {
	return r.object(runState{status: status})
}

func (r Run) object(st runState) Object {
	var started, cancelled, failed, completed any
	if st.status != "queued" {
		started = r.CreatedAt + 1
	}
	switch st.status {
	case "cancelled":
		cancelled = r.CreatedAt + 20
	case "failed":
		failed = r.CreatedAt + 20
	case "completed":
		completed = r.CreatedAt + 20
	}
	var requiredAction any
	if st.status == "requires_action" {
		calls := make([]Object, len(st.calls))
		for i, c := range st.calls {
			calls[i] = Object{{"id", c.ID}, {"type", "function"}, {"function", Object{{"name", c.Name}, {"arguments", c.Arguments}}}}
		}
		requiredAction = Object{{"type", "submit_tool_outputs"}, {"submit_tool_outputs", Object{{"tool_calls", calls}}}}
	}
	var lastError, usage any
	if st.lastError != nil {
		lastError = *st.lastError
	}
	if st.usage != nil {
		usage = st.usage.object()
	}
	tools := make([]Object, len(r.Tools))
	for i, t := range r.Tools {
		fn := Object{{"name", t.Name}, {"description", t.Description}}
		if len(t.Parameters) > 0 {
			fn = append(fn, Field{"parameters", t.Parameters})
		}
		fn = append(fn, Field{"strict", false})
		tools[i] = Object{{"type", "function"}, {"function", fn}}
	}
	return Object{
		{"id", r.ID},
		{"object", "thread.run"},
		{"created_at", r.CreatedAt},
		{"assistant_id", r.AssistantID},
		{"thread_id", r.ThreadID},
		{"status", st.status},
		{"started_at", started},
		{"expires_at", r.CreatedAt + 600},
		{"cancelled_at", cancelled},
		{"failed_at", failed},
		{"completed_at", completed},
		{"required_action", requiredAction},
		{"last_error", lastError},
		{"model", r.Model},
		{"instructions", r.Instructions},
		{"tools", tools},
		{"tool_resources", Object{}},
		{"metadata", Object{}},
		{"temperature", 1.0},
		{"top_p", 1.0},
		{"max_completion_tokens", nil},
		{"max_prompt_tokens", nil},
		{"truncation_strategy", Object{{"type", "auto"}, {"last_messages", nil}}},
		{"incomplete_details", nil},
		{"usage", usage},
		{"response_format", "auto"},
		{"tool_choice", "auto"},
		{"parallel_tool_calls", true},
	}
}

func (r Run) event(name string, st runState) Event {
	return Event{Name: name, Data: Encode(r.object(st))}
}

// ThreadCreated is the thread.created event of the run's thread.
func (r Run) ThreadCreated() Event {
	return Event{Name: "thread.created", Data: Encode(Object{
		{"id", r.ThreadID}, {"object", "thread"}, {"created_at", r.CreatedAt},
		{"metadata", Object{}}, {"tool_resources", Object{}},
	})}
}

// Created is thread.run.created (the run is queued).
func (r Run) Created() Event { return r.event("thread.run.created", runState{status: "queued"}) }

// Queued is thread.run.queued.
func (r Run) Queued() Event { return r.Status("queued") }

// InProgress is thread.run.in_progress.
func (r Run) InProgress() Event { return r.Status("in_progress") }

// Cancelling is thread.run.cancelling.
func (r Run) Cancelling() Event { return r.Status("cancelling") }

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
	le := Object{{"code", code}, {"message", message}}
	return r.event("thread.run.failed", runState{status: "failed", lastError: &le})
}

func (r Run) message(msgID, status, text string) Object {
	content := []Object{}
	if text != "" {
		content = append(content, Object{{"type", "text"}, {"text", Object{{"value", text}, {"annotations", []any{}}}}})
	}
	var completed any
	if status == "completed" {
		completed = r.CreatedAt + 10
	}
	return Object{
		{"id", msgID}, {"object", "thread.message"}, {"created_at", r.CreatedAt + 5},
		{"assistant_id", r.AssistantID}, {"thread_id", r.ThreadID}, {"run_id", r.ID},
		{"status", status}, {"incomplete_details", nil}, {"incomplete_at", nil}, {"completed_at", completed},
		{"role", "assistant"}, {"content", content}, {"attachments", []any{}}, {"metadata", Object{}},
	}
}

// Message is an assistant message streamed in chunks:
// thread.message.created, in_progress, one delta per chunk, completed.
func (r Run) Message(msgID string, chunks ...string) []Event {
	evs := []Event{
		{Name: "thread.message.created", Data: Encode(r.message(msgID, "in_progress", ""))},
		{Name: "thread.message.in_progress", Data: Encode(r.message(msgID, "in_progress", ""))},
	}
	for i, c := range chunks {
		d := MessageDelta(msgID, c)
		if i == 0 { // the service lists annotations on the first delta only
			d.Data = Encode(messageDelta(msgID, c, true))
		}
		evs = append(evs, d)
	}
	evs = append(evs, Event{Name: "thread.message.completed", Data: Encode(r.message(msgID, "completed", strings.Join(chunks, "")))})
	return evs
}

// MessageDelta is one thread.message.delta carrying text.
func MessageDelta(msgID, text string) Event {
	return Event{Name: "thread.message.delta", Data: Encode(messageDelta(msgID, text, false))}
}

func messageDelta(msgID, text string, annotations bool) Object {
	t := Object{{"value", text}}
	if annotations {
		t = append(t, Field{"annotations", []any{}})
	}
	return Object{
		{"id", msgID}, {"object", "thread.message.delta"},
		{"delta", Object{{"content", []Object{{{"index", 0}, {"type", "text"}, {"text", t}}}}}},
	}
}

func (r Run) step(stepID, kind, status string, details Object, u *Usage) Object {
	var completed, usage any
	if status == "completed" {
		completed = r.CreatedAt + 10
	}
	if u != nil {
		usage = u.object()
	}
	return Object{
		{"id", stepID}, {"object", "thread.run.step"}, {"created_at", r.CreatedAt + 2},
		{"run_id", r.ID}, {"assistant_id", r.AssistantID}, {"thread_id", r.ThreadID},
		{"type", kind}, {"status", status}, {"cancelled_at", nil}, {"completed_at", completed},
		{"expires_at", r.CreatedAt + 600}, {"failed_at", nil}, {"last_error", nil},
		{"step_details", details}, {"usage", usage},
	}
}

// MessageStepCreated is the thread.run.step.created of a step creating msgID.
func (r Run) MessageStepCreated(stepID, msgID string) Event {
	details := Object{{"type", "message_creation"}, {"message_creation", Object{{"message_id", msgID}}}}
	return Event{Name: "thread.run.step.created", Data: Encode(r.step(stepID, "message_creation", "in_progress", details, nil))}
}

// MessageStepCompleted is the thread.run.step.completed of that step, with
// the step's own usage.
func (r Run) MessageStepCompleted(stepID, msgID string, u Usage) Event {
	details := Object{{"type", "message_creation"}, {"message_creation", Object{{"message_id", msgID}}}}
	return Event{Name: "thread.run.step.completed", Data: Encode(r.step(stepID, "message_creation", "completed", details, &u))}
}

// ToolCallStep is a tool-calls step as it streams before requires_action:
// thread.run.step.created, in_progress, then per call a delta with its id
// and name and deltas with fragments of its arguments.
func (r Run) ToolCallStep(stepID string, calls ...ToolCall) []Event {
	empty := Object{{"type", "tool_calls"}, {"tool_calls", []any{}}}
	evs := []Event{
		{Name: "thread.run.step.created", Data: Encode(r.step(stepID, "tool_calls", "in_progress", empty, nil))},
		{Name: "thread.run.step.in_progress", Data: Encode(r.step(stepID, "tool_calls", "in_progress", empty, nil))},
	}
	for i, c := range calls {
		evs = append(evs, stepDelta(stepID, Object{
			{"index", i}, {"id", c.ID}, {"type", "function"},
			{"function", Object{{"name", c.Name}, {"arguments", ""}, {"output", nil}}},
		}))
		for _, frag := range fragments(c.Arguments, 6) {
			evs = append(evs, stepDelta(stepID, Object{
				{"index", i}, {"type", "function"}, {"function", Object{{"arguments", frag}}},
			}))
		}
	}
	return evs
}

// ToolStepCompleted is the thread.run.step.completed of a tool-calls step
// once outputs were submitted; it opens the submit_tool_outputs stream.
func (r Run) ToolStepCompleted(stepID string, calls []ToolCall, outputs []string, u Usage) Event {
	tcs := make([]Object, len(calls))
	for i, c := range calls {
		var out any
		if i < len(outputs) {
			out = outputs[i]
		}
		tcs[i] = Object{{"id", c.ID}, {"type", "function"}, {"function", Object{{"name", c.Name}, {"arguments", c.Arguments}, {"output", out}}}}
	}
	details := Object{{"type", "tool_calls"}, {"tool_calls", tcs}}
	return Event{Name: "thread.run.step.completed", Data: Encode(r.step(stepID, "tool_calls", "completed", details, &u))}
}

func stepDelta(stepID string, call Object) Event {
	return Event{Name: "thread.run.step.delta", Data: Encode(Object{
		{"id", stepID}, {"object", "thread.run.step.delta"},
		{"delta", Object{{"step_details", Object{{"type", "tool_calls"}, {"tool_calls", []Object{call}}}}}},
	})}
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
func Done() Event { return Event{Name: "done", Data: "[DONE]"} }

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
