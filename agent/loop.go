package agent

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/agenterr"
)

// MaxToolRounds is how many responses of one run may ask for tools before
// the loop gives up on the run: an agent that asks more is looping.
const MaxToolRounds = 16

// Loop runs an agent through a provider. The provider speaks its service's
// wire; the loop does the rest, the same for every service: it reads each
// response of the run, runs the tools a response asks for, yields their
// results, and continues the run with them. It is safe for concurrent
// use: each Run is a run of its own.
type Loop struct {
	provider brainwire.Provider
}

// NewLoop returns a loop running the agent p starts.
func NewLoop(p brainwire.Provider) *Loop { return &Loop{provider: p} }

// Run runs the agent once over req, offering it tools (req.Tools is set
// to their definitions). It yields the events of each response of the
// run; when a response asks for tools, it runs them (CallTools), yields
// one AgentToolResult per call in the order of the calls, and continues
// the run with their results, until a response ends the run or a tool's
// result is Fatal, which ends it with that error.
//
// A failure is yielded once as a zero Event with the error, and ends the
// sequence; once ctx has ended, the error says so (errors.Is(err,
// ctx.Err())). However the sequence ends, the run is closed before Run
// returns (after the failure is yielded): a consumer that stops iterating
// stops the run upstream.
func (l *Loop) Run(ctx context.Context, req brainwire.RunRequest, tools brainwire.ToolSet) iter.Seq2[brainwire.AgentEvent, error] {
	return func(yield func(brainwire.AgentEvent, error) bool) {
		if tools != nil {
			req.Tools = tools.Definitions()
		}
		// The run is started apart, so that the consumer hears as soon as
		// ctx ends: a provider may have to see its first request through
		// past ctx's end (to learn the run it created, so that it can stop
		// it), which the consumer need not wait for. Run waits for it.
		starting := l.start(ctx, req)
		var run brainwire.Run
		var err error
		select {
		case s := <-starting:
			run, err, starting = s.run, s.err, nil
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err == nil {
			err = l.drive(ctx, run, tools, yield)
		}
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("agent %s stopped: %w", name(run), ctx.Err())
			}
			// Told before the run is closed: closing may wait on the
			// service (a cancel), which the consumer need not.
			yield(brainwire.AgentEvent{}, err)
		}
		if starting != nil {
			run = (<-starting).run
		}
		if run != nil {
			run.Close()
		}
	}
}

// started is how a run's start went.
type started struct {
	run brainwire.Run
	err error
}

// start starts the run in the background.
func (l *Loop) start(ctx context.Context, req brainwire.RunRequest) chan started {
	ch := make(chan started, 1)
	go func() {
		var s started
		s.run, s.err = l.provider.Start(ctx, req)
		ch <- s
	}()
	return ch
}

// drive reads run's responses and runs the tools they ask for until the
// run ends, the consumer stops (nil) or something fails.
func (l *Loop) drive(ctx context.Context, run brainwire.Run, tools brainwire.ToolSet, yield func(brainwire.AgentEvent, error) bool) error {
	var threadID, runID string // the upstream ids, as the events gave them
	for round := 0; ; round++ {
		var calls []brainwire.ToolCall
		var status brainwire.RunStatus
		failed := false
		for {
			ev, err := run.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if ev.ThreadID != "" {
				threadID = ev.ThreadID
			}
			if ev.RunID != "" {
				runID = ev.RunID
			}
			switch ev.Kind {
			case brainwire.AgentToolCall:
				calls = append(calls, ev.Tool)
			case brainwire.AgentRunStatus:
				status = ev.Status
			case brainwire.AgentError:
				failed = true
			}
			if !yield(ev, nil) {
				return nil
			}
		}

		switch {
		case failed, status.Terminal():
			// The events told how the run ended.
			return nil
		case status != brainwire.RunRequiresAction:
			return &agenterr.Error{
				Msg: "the agent service ended the stream before the run finished",
				Err: fmt.Errorf("the stream of %s ended while it was %q", run, status),
			}
		case len(calls) == 0:
			return &agenterr.Error{
				Msg: "the agent asked for an action this service cannot take",
				Err: fmt.Errorf("%s requires action but asked for no function calls", run),
			}
		case round >= MaxToolRounds:
			return &agenterr.Error{
				Msg: "the agent kept asking for tools",
				Err: fmt.Errorf("%s asked for tools more than %d times", run, MaxToolRounds),
			}
		}

		results := CallTools(ctx, tools, calls)
		if err := ctx.Err(); err != nil {
			return err
		}
		// The results go out before the run continues: the outcome can be
		// told as soon as the capture is filed.
		for i, call := range calls {
			ev := brainwire.AgentEvent{Kind: brainwire.AgentToolResult, ThreadID: threadID, RunID: runID, Tool: call, Result: results[i]}
			if !yield(ev, nil) {
				return nil
			}
		}
		for _, res := range results {
			if res.Fatal != nil {
				// The agent cannot mend it: the run stops here.
				return fmt.Errorf("%s: %s: %w", run, res.Name, res.Fatal)
			}
		}
		if err := run.Continue(results); err != nil {
			return err
		}
	}
}

// name names a run in messages; run is nil when it never started.
func name(run brainwire.Run) string {
	if run == nil {
		return "run"
	}
	return run.String()
}
