// Package adapter turns a provider's normalized event stream into the
// protocol-neutral capture events the phone protocols are encoded from. It
// is pure: no I/O, no clock, no goroutines, so any stream can be replayed
// through it deterministically.
//
// It decides the steps and the outcome. The outcome goes out as soon as the
// file_capture tool's result is known, not when the run ends; COMPLETE
// follows once the run is terminal. Text chunks become Reasoning events,
// numbered consecutively across the whole run, which encoders never write
// to the phone.
package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
)

// DefaultQuestion is asked when the agent marks a capture misunderstood
// without saying what it wants to know.
const DefaultQuestion = "Could you tell me a bit more about what you meant?"

// Config identifies one capture.
type Config struct {
	Kind     brainwire.CaptureKind
	ThreadID string // the capture's thread id, echoed in COMPLETE
	RunID    string // the capture's run id, echoed in COMPLETE and on reasoning
}

// Adapter tracks one capture run. Use one per capture; not safe for
// concurrent use.
type Adapter struct {
	cfg      Config
	step     string
	started  bool
	stepDone bool
	outcome  brainwire.CaptureEventType // 0 until an outcome was sent
	done     bool
	chunks   int

	upstreamThread string
	upstreamRun    string
	calls          []fileCall // file_capture calls awaiting their result
}

type fileCall struct {
	id       string
	status   string
	question string
}

// New returns an Adapter for one capture.
func New(cfg Config) *Adapter {
	step := brainwire.StepClassifying
	if cfg.Kind == brainwire.KindVoice {
		step = brainwire.StepProcessing
	}
	return &Adapter{cfg: cfg, step: step}
}

// Start appends STEP_START. Send it before the upstream answers.
func (a *Adapter) Start(out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	if a.started {
		return out
	}
	a.started = true
	return append(out, brainwire.CaptureEvent{Type: brainwire.CaptureStepStart, StepName: a.step})
}

// Done reports whether COMPLETE has been produced; nothing follows it.
func (a *Adapter) Done() bool { return a.done }

// Outcome returns the outcome event type sent so far, or 0.
func (a *Adapter) Outcome() brainwire.CaptureEventType { return a.outcome }

// Chunks returns how many reasoning chunks were seen.
func (a *Adapter) Chunks() int { return a.chunks }

// Handle appends the capture events that ev causes.
func (a *Adapter) Handle(ev brainwire.Event, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	if a.done {
		return out
	}
	out = a.Start(out)
	if ev.ThreadID != "" {
		a.upstreamThread = ev.ThreadID
	}
	if ev.RunID != "" {
		a.upstreamRun = ev.RunID
	}
	switch ev.Kind {
	case brainwire.EventTextChunk:
		out = append(out, brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{
			RunID:            a.cfg.RunID,
			Index:            a.chunks,
			Text:             ev.Text,
			UpstreamRunID:    a.upstreamRun,
			UpstreamThreadID: a.upstreamThread,
		}})
		a.chunks++
	case brainwire.EventToolCall:
		if ev.Tool.Name == brainwire.ToolFileCapture {
			a.calls = append(a.calls, parseCall(ev.Tool))
		}
	case brainwire.EventToolResult:
		if ev.Tool.Name == brainwire.ToolFileCapture {
			out = a.fileResult(ev, out)
		}
	case brainwire.EventRunStatus:
		out = a.runStatus(ev, out)
	case brainwire.EventError:
		out = a.fail(upstreamMessage("The agent service reported an error", ev.ErrorMessage), out)
	}
	return out
}

// Finish appends what ends the capture when the provider's stream ends:
// err is the stream's final error, nil when it ended normally.
func (a *Adapter) Finish(err error, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	if a.done {
		return out
	}
	out = a.Start(out)
	if err != nil {
		return a.fail(ErrorMessage(err), out)
	}
	if a.outcome == 0 {
		// The stream ended cleanly without a terminal run state.
		return a.fail("The agent run ended unexpectedly", out)
	}
	return a.complete(out)
}

func (a *Adapter) fileResult(ev brainwire.Event, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	call := a.takeCall(ev.Tool.ID)
	if ev.Result.IsError || a.outcome != 0 {
		// The agent sees the error and may retry; only the first filing
		// is the capture's outcome.
		return out
	}
	var res struct {
		Bucket     string  `json:"bucket"`
		Confidence float64 `json:"confidence"`
		ItemID     string  `json:"item_id"`
		Status     string  `json:"status"`
	}
	if err := json.Unmarshal([]byte(ev.Result.Output), &res); err != nil || res.ItemID == "" {
		return out
	}
	status := res.Status
	if status == "" {
		status = call.status
	}
	o := brainwire.Outcome{InboxItemID: res.ItemID, Bucket: res.Bucket, Confidence: res.Confidence}
	var typ brainwire.CaptureEventType
	switch status {
	case brainwire.StatusClassified:
		typ = brainwire.CaptureClassified
	case brainwire.StatusPending:
		typ = brainwire.CaptureLowConfidence
	case brainwire.StatusMisunderstood:
		typ = brainwire.CaptureMisunderstood
		o.ThreadID = a.cfg.ThreadID
		o.QuestionText = call.question
		if o.QuestionText == "" {
			o.QuestionText = DefaultQuestion
		}
		o.FoundryConversationID = ev.Tool.ThreadID
		if o.FoundryConversationID == "" {
			o.FoundryConversationID = a.upstreamThread
		}
	default:
		typ = brainwire.CaptureUnresolved
	}
	return a.sendOutcome(brainwire.CaptureEvent{Type: typ, Outcome: o}, out)
}

func (a *Adapter) runStatus(ev brainwire.Event, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	switch ev.Status {
	case brainwire.RunCompleted:
		if a.outcome == 0 {
			out = a.sendOutcome(brainwire.CaptureEvent{Type: brainwire.CaptureUnresolved}, out)
		}
		return a.complete(out)
	case brainwire.RunFailed:
		return a.fail(upstreamMessage("The agent run failed", ev.ErrorMessage), out)
	case brainwire.RunCancelled:
		return a.fail("The agent run was cancelled", out)
	case brainwire.RunExpired:
		return a.fail("The agent run expired", out)
	case brainwire.RunIncomplete:
		return a.fail("The agent run ended incomplete", out)
	}
	return out
}

func (a *Adapter) sendOutcome(ev brainwire.CaptureEvent, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	if !a.stepDone {
		a.stepDone = true
		out = append(out, brainwire.CaptureEvent{Type: brainwire.CaptureStepEnd, StepName: a.step})
	}
	a.outcome = ev.Type
	return append(out, ev)
}

// fail ends the capture. A failure after the outcome was sent is not the
// phone's concern: the capture was filed, so it just completes.
func (a *Adapter) fail(msg string, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	if a.outcome == 0 {
		out = append(out, brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: msg})
	}
	return a.complete(out)
}

func (a *Adapter) complete(out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	a.done = true
	return append(out, brainwire.CaptureEvent{Type: brainwire.CaptureComplete, ThreadID: a.cfg.ThreadID, RunID: a.cfg.RunID})
}

func (a *Adapter) takeCall(id string) fileCall {
	for i, c := range a.calls {
		if c.id == id {
			a.calls = append(a.calls[:i], a.calls[i+1:]...)
			return c
		}
	}
	return fileCall{id: id}
}

func parseCall(tc brainwire.ToolCall) fileCall {
	var args struct {
		Status   string `json:"status"`
		Question string `json:"question"`
	}
	_ = json.Unmarshal(tc.Arguments, &args) // malformed arguments fail in the tool, not here
	return fileCall{id: tc.ID, status: args.Status, question: args.Question}
}

// ErrorMessage is the phone-facing message for a stream that ended in err:
// short, actionable, and free of internals.
func ErrorMessage(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "The agent took too long to respond"
	case errors.Is(err, context.Canceled):
		return "The capture was cancelled"
	}
	var e *brainwire.Error
	if errors.As(err, &e) {
		return upstreamMessage("The agent service failed", e.Message)
	}
	return "The agent service could not be reached"
}

func upstreamMessage(prefix, detail string) string {
	if detail == "" {
		return prefix
	}
	const max = 200
	if len(detail) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(detail[cut]) {
			cut--
		}
		detail = detail[:cut] + "…"
	}
	return prefix + ": " + detail
}
