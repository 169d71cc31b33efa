// Package adapter turns a provider's normalized event stream into the
// protocol-neutral capture events the phone protocols are encoded from, and
// keeps the capture's result. It is pure: no I/O, no clock, no goroutines,
// so any stream can be replayed through it deterministically.
//
// It decides the steps and the outcome. The outcome goes out as soon as the
// file_capture tool's result is known, not when the run ends; COMPLETE
// follows once the run is terminal. Text chunks become Reasoning events,
// numbered consecutively across the whole run; those after the outcome are
// marked as the agent's closing words. Every tool call and tool result
// becomes a capture event too. Which of these a client sees is its
// protocol's choice: the phone's sees none.
//
// A follow-up whose filing a person's edit of its item refused (the item
// was recategorized or deleted meanwhile) ends in an error that says so,
// typed by the store's code, when its run ends without a filing: the
// person's choice won, the agent did not fail.
//
// Every ERROR carries a code for clients (ErrorCode) from a closed set,
// the same in every protocol; the capture's ErrorType keeps the finer,
// open-ended cause (the agent service's own codes) for telemetry.
package adapter

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/textcut"
)

// DefaultQuestion is asked when the agent marks a capture misunderstood
// without saying what it wants to know.
const DefaultQuestion = brainwire.DefaultQuestion

// The codes of ERROR that are not application error codes.
const (
	CodeTimeout  = "timeout"  // the run took longer than the server allows
	CodeCanceled = "canceled" // the capture was stopped before it ended
)

// maxUpstreamDetail bounds how much of the agent service's own words an
// ERROR message carries.
const maxUpstreamDetail = 200

// Adapter tracks one capture run. Use one per capture; not safe for
// concurrent use.
type Adapter struct {
	c        brainwire.Capture
	step     string
	started  bool
	stepDone bool
	done     bool
	// superseded is the code of a follow-up filing refused because a
	// person changed or deleted the item meanwhile (ToolResult.Superseded).
	superseded string
	res        brainwire.CaptureResult

	// Keep, when set, keeps a new capture the agent's run left unfiled
	// as an inbox item before the outcome is told, setting the item on
	// the result (UNRESOLVED names it). A brainwire.Failure from it (the
	// capture's words could not be had) ends the capture in that error
	// instead; any other error leaves the outcome without an item.
	Keep func(*brainwire.CaptureResult) error
}

// New returns an Adapter for one capture.
func New(c brainwire.Capture) *Adapter {
	return &Adapter{c: c, step: c.Step()}
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

// Result returns the capture's result so far; it is final once Done. The
// pointer stays the Adapter's.
func (a *Adapter) Result() *brainwire.CaptureResult { return &a.res }

// Handle appends the capture events that ev causes.
func (a *Adapter) Handle(ev brainwire.AgentEvent, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	if a.done {
		return out
	}
	out = a.Start(out)
	if ev.ThreadID != "" {
		a.res.UpstreamThreadID = ev.ThreadID
	}
	if ev.RunID != "" {
		a.res.UpstreamRunID = ev.RunID
	}
	switch ev.Kind {
	case brainwire.AgentTextChunk:
		out = append(out, brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{
			RunID:            a.c.RunID,
			Index:            a.res.ReasoningChunks,
			Text:             ev.Text,
			UpstreamRunID:    a.res.UpstreamRunID,
			UpstreamThreadID: a.res.UpstreamThreadID,
			AfterOutcome:     a.res.Outcome != "",
		}})
		a.res.ReasoningChunks++
	case brainwire.AgentToolCall:
		call := ev.Tool
		out = append(out, brainwire.CaptureEvent{Type: brainwire.CaptureToolCall, Tool: &call})
	case brainwire.AgentToolResult:
		// Copies, so the events stay true whatever the provider does with
		// its own; tool rounds are few.
		call, res := ev.Tool, ev.Result
		out = append(out, brainwire.CaptureEvent{Type: brainwire.CaptureToolResult, Tool: &call, ToolResult: &res})
		if ev.Tool.Name == brainwire.ToolFileCapture {
			out = a.fileResult(ev, out)
		}
	case brainwire.AgentUsage:
		u := &a.res.Usage
		u.PromptTokens += ev.Usage.PromptTokens
		u.CompletionTokens += ev.Usage.CompletionTokens
		u.TotalTokens += ev.Usage.TotalTokens
		u.ReasoningTokens += ev.Usage.ReasoningTokens
		a.res.HasUsage = true
	case brainwire.AgentRunStatus:
		a.res.RunStatus = ev.Status
		out = a.runStatus(ev, out)
	case brainwire.AgentError:
		a.res.ErrorType = cmp.Or(ev.ErrorCode, "stream_error")
		out = a.fail(upstreamMessage("The agent service reported an error", ev.ErrorMessage), brainwire.EUpstream, out)
	}
	return out
}

// Finish appends what ends the capture when the provider's stream ends:
// err is the stream's final error, nil when it ended normally.
func (a *Adapter) Finish(err error, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	if err != nil {
		a.res.Err = err
		a.res.ErrorType = ErrorType(err)
	}
	if a.done {
		return out
	}
	out = a.Start(out)
	if err != nil {
		return a.failWith(ErrorMessage(err), ErrorCode(err), RetryAfter(err), out)
	}
	if a.res.Outcome == "" {
		// The stream ended cleanly without a terminal run state.
		return a.fail("The agent run ended unexpectedly", brainwire.EUpstream, out)
	}
	return a.complete(out)
}

func (a *Adapter) fileResult(ev brainwire.AgentEvent, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	f := ev.Result.Filed
	if ev.Result.Superseded != "" && a.superseded == "" {
		a.superseded = ev.Result.Superseded
	}
	if ev.Result.IsError || f == nil || a.res.Outcome != "" {
		// The agent sees the error and may retry; only the first filing
		// is the capture's outcome.
		return out
	}
	// What the phone is told is what the filing kept under the request's
	// Idempotency-Key for its repeats (FileCaptureResult.Result).
	told := f.Result(ev.Tool.ThreadID)
	r := &a.res
	r.InboxItemID, r.Bucket, r.Confidence, r.Question = told.InboxItemID, told.Bucket, told.Confidence, told.Question
	if told.UpstreamThreadID != "" {
		r.UpstreamThreadID = told.UpstreamThreadID
	}
	return a.sendOutcome(told.Outcome, out)
}

func (a *Adapter) runStatus(ev brainwire.AgentEvent, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	switch ev.Status {
	case brainwire.RunCompleted:
		if a.res.Outcome == "" && a.superseded != "" {
			// The person's edit won the race: not the agent's failure.
			a.res.ErrorType = a.superseded
			return a.fail(supersededMessage(a.superseded), a.superseded, out)
		}
		if a.res.Outcome == "" {
			out = a.sendOutcome(brainwire.OutcomeUnresolved, out)
		}
		return a.complete(out)
	case brainwire.RunFailed:
		a.res.ErrorType = cmp.Or(ev.ErrorCode, "run_failed")
		return a.fail(upstreamMessage("The agent run failed", ev.ErrorMessage), brainwire.EUpstream, out)
	case brainwire.RunCancelled:
		return a.fail("The agent run was cancelled", brainwire.EUpstream, out)
	case brainwire.RunExpired:
		return a.fail("The agent run expired", brainwire.EUpstream, out)
	case brainwire.RunIncomplete:
		return a.fail("The agent run ended incomplete", brainwire.EUpstream, out)
	}
	return out
}

func (a *Adapter) sendOutcome(o brainwire.Outcome, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	if o == brainwire.OutcomeUnresolved && a.Keep != nil && a.res.InboxItemID == "" {
		var f *brainwire.Failure
		if err := a.Keep(&a.res); errors.As(err, &f) {
			a.res.Err, a.res.ErrorType = err, ErrorType(err)
			return a.failWith(f.Message, f.Code, f.RetryAfter, out)
		}
	}
	if !a.stepDone {
		a.stepDone = true
		out = append(out, brainwire.CaptureEvent{Type: brainwire.CaptureStepEnd, StepName: a.step})
	}
	a.res.Outcome = o
	return append(out, brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: &a.res, ThreadID: a.c.ThreadID, RunID: a.c.RunID})
}

// fail ends the capture with msg and the client's code. A failure after
// the outcome was sent is not the phone's concern: the capture was filed,
// so it just completes.
func (a *Adapter) fail(msg, code string, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	return a.failWith(msg, code, 0, out)
}

// failWith is fail, telling how long a busy service asked to wait.
func (a *Adapter) failWith(msg, code string, retryAfter time.Duration, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	if a.res.Outcome == "" {
		a.res.Outcome, a.res.ErrorMessage = brainwire.OutcomeError, msg
		if a.res.ErrorType == "" {
			a.res.ErrorType = "capture_error"
		}
		out = append(out, brainwire.CaptureEvent{Type: brainwire.CaptureError, Message: msg, Code: code, RetryAfter: retryAfter, Result: &a.res})
	}
	return a.complete(out)
}

func (a *Adapter) complete(out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	a.done = true
	if a.res.Outcome != brainwire.OutcomeError && a.res.Err == nil {
		// An upstream failure after the outcome does not fail the capture.
		a.res.ErrorType = ""
	}
	return append(out, brainwire.CaptureEvent{Type: brainwire.CaptureComplete, ThreadID: a.c.ThreadID, RunID: a.c.RunID})
}

// ErrorMessage is the phone-facing message for a stream that ended in err:
// short, actionable, and free of internals. A brainwire.Failure says its
// own.
func ErrorMessage(err error) string {
	var f *brainwire.Failure
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "The agent took too long to respond"
	case errors.Is(err, context.Canceled):
		return "The capture was cancelled"
	case errors.As(err, &f):
		return f.Message
	}
	var e *brainwire.Error
	switch {
	case !errors.As(err, &e):
		return "The agent service could not be reached"
	case e.Code == brainwire.EUpstreamAuth, e.Code == brainwire.EBusy:
		// brainwire's own credential (nothing the person can retry away,
		// and not the network), or a service asking for time: said whole.
		return e.Message
	}
	return upstreamMessage("The agent service failed", e.Message)
}

// ErrorCode is the clients' code for a stream that ended in err, as
// ErrorMessage words it: CodeTimeout, CodeCanceled, a brainwire.Failure's
// own, EUpstreamAuth when brainwire could not sign in, EBusy when the
// service asked to be called later and the retries are spent,
// EUnavailable when the service could not be reached, else EUpstream.
func ErrorCode(err error) string {
	var f *brainwire.Failure
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	case errors.As(err, &f):
		return f.Code
	}
	var e *brainwire.Error
	switch {
	case !errors.As(err, &e):
		return brainwire.EUnavailable
	case e.Code == brainwire.EUpstreamAuth, e.Code == brainwire.EBusy:
		return e.Code
	}
	return brainwire.EUpstream
}

// RetryAfter is how long the busy service err came from asked to wait,
// when it said: a brainwire.Failure's or brainwire.Error's. Zero for a
// timeout or a cancellation, whatever the cause.
func RetryAfter(err error) time.Duration {
	var f *brainwire.Failure
	var e *brainwire.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return 0
	case errors.As(err, &f):
		return f.RetryAfter
	case errors.As(err, &e):
		return e.RetryAfter
	}
	return 0
}

// supersededMessage tells the client why a follow-up filed nothing when a
// person's edit of its item won: code is EConflict or ENotFound.
func supersededMessage(code string) string {
	if code == brainwire.ENotFound {
		return "The item was deleted while the follow-up ran, so the follow-up was not filed"
	}
	return "The item was changed while the follow-up ran, so the follow-up was not filed"
}

// ErrorType names why a stream ended in err: cancellations and timeouts by
// name, else the application error code.
func ErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	}
	return brainwire.ErrorCode(err)
}

func upstreamMessage(prefix, detail string) string {
	if detail == "" {
		return prefix
	}
	return prefix + ": " + textcut.Ellipsis(detail, maxUpstreamDetail)
}

// Replay appends the events of a capture that already ended as r, told
// again without running anything: STEP_START, STEP_END, the outcome,
// COMPLETE, under c's ids (the first run's), as the first run sent them
// minus its reasoning and tool calls.
func Replay(c brainwire.Capture, r *brainwire.CaptureResult, out []brainwire.CaptureEvent) []brainwire.CaptureEvent {
	step := c.Step()
	return append(out,
		brainwire.CaptureEvent{Type: brainwire.CaptureStepStart, StepName: step},
		brainwire.CaptureEvent{Type: brainwire.CaptureStepEnd, StepName: step},
		brainwire.CaptureEvent{Type: brainwire.CaptureOutcome, Result: r, ThreadID: c.ThreadID, RunID: c.RunID},
		brainwire.CaptureEvent{Type: brainwire.CaptureComplete, ThreadID: c.ThreadID, RunID: c.RunID})
}
