// Package shadow tries candidate instructions on live captures: for a
// sampled capture whose production run filed an item, once the phone's
// stream has ended, the candidate runs through the same agent loop and
// adapter as production, with tools that record what it would have filed
// and file nothing, and the item keeps the trial (brainwire.ShadowTrial).
// A shadow never holds up a capture: it runs on a goroutine of its own,
// within its own concurrency limit and timeout, retried at most once and
// dropped first when the agent service pushes back or the server drains.
// A dropped shadow is counted (brainwire.ShadowObserver), not hidden.
package shadow

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adapter"
	"github.com/brainwire/brainwire/agent"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/internal/textcut"
	"github.com/brainwire/brainwire/tools"
)

// DefaultConcurrency is how many shadow runs may run at once by default.
const DefaultConcurrency = 4

// Store is what a shadow reads and keeps: the production run's item, and
// the trial on it.
type Store interface {
	GetInboxItem(ctx context.Context, userID, id string) (brainwire.InboxItem, error)
	brainwire.ShadowStore
}

// Config is what a Runner needs. Instructions, Sample, Timeout and Store
// are required.
type Config struct {
	// Instructions are the candidate's.
	Instructions string
	// Sample is the fraction of captures tried (brainwire.ShadowSampled).
	Sample float64
	// Concurrency bounds the shadow runs at once (DefaultConcurrency when
	// 0); a sampled capture beyond it is dropped, never queued.
	Concurrency int
	// Timeout bounds one shadow run.
	Timeout time.Duration
	Store   Store
	Logger  *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Runner runs shadows. Drain stops it.
type Runner struct {
	cfg    Config
	slots  chan struct{}
	base   context.Context
	cancel context.CancelFunc
	// mu orders starting a shadow (wg.Add) before Drain's wait.
	mu sync.Mutex
	wg sync.WaitGroup
}

// New returns a Runner.
func New(cfg Config) *Runner {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	base, cancel := context.WithCancel(context.Background())
	return &Runner{cfg: cfg, slots: make(chan struct{}, cfg.Concurrency), base: base, cancel: cancel}
}

// Drain stops the shadows: those running are cancelled (dropped as
// draining), later offers are dropped; it returns once none runs.
func (r *Runner) Drain() {
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	r.wg.Wait()
}

// Samples reports whether capture c, about to run, is among those a
// shadow tries if its run files an item: a first capture, not an
// evaluation's, whose run id is sampled. Its production reasoning is then
// gathered (Excerpt) for the trial.
func (r *Runner) Samples(c brainwire.Capture) bool {
	return c.FollowUp == nil && c.EvalRunID == "" && (c.Kind == brainwire.KindText || c.Kind == brainwire.KindVoice) &&
		brainwire.ShadowSampled(c.RunID, r.cfg.Sample)
}

// Production is a capture production ran, offered to a shadow once its
// stream ended.
type Production struct {
	// Provider and Observer are what the capture ran with: the shadow
	// runs on the same provider, and is observed as a shadow by the
	// observers that watch shadows.
	Provider brainwire.Provider
	Observer brainwire.Observer
	// Capture is the capture as it ran (Agent and Trace set), Result
	// how it ended, Reasoning the start of its reasoning.
	Capture   brainwire.Capture
	Result    brainwire.CaptureResult
	Reasoning string
}

// Offer tries the candidate on p in shadow, on a goroutine of its own,
// when p's run filed an item; it never waits. A shadow it cannot start is
// dropped (busy, draining).
func (r *Runner) Offer(p Production) {
	if p.Result.InboxItemID == "" || !p.Result.Outcome.Filed() {
		return
	}
	obs := shadowObserver(p.Observer)
	if reason := r.start(); reason != "" {
		r.dropped(r.base, obs, p.Capture, reason, nil)
		return
	}
	go func() {
		defer r.wg.Done()
		defer func() { <-r.slots }()
		r.run(p, obs)
	}()
}

// start takes a slot for a shadow, or says why there is none.
func (r *Runner) start() (dropped string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.base.Err() != nil {
		return brainwire.ShadowDraining
	}
	select {
	case r.slots <- struct{}{}:
		r.wg.Add(1)
		return ""
	default:
		return brainwire.ShadowBusy
	}
}

func (r *Runner) dropped(ctx context.Context, obs brainwire.ShadowObserver, c brainwire.Capture, reason string, err error) {
	obs.ShadowDropped(context.WithoutCancel(ctx), reason)
	// Busy and draining are the bounds doing their job (a burst drops
	// thousands): the counter tells them; a failure is worth a line.
	level := slog.LevelWarn
	if reason == brainwire.ShadowBusy || reason == brainwire.ShadowDraining {
		level = slog.LevelDebug
	}
	r.cfg.Logger.Log(ctx, level, "shadow dropped", "run_id", c.RunID, "user", c.UserID, "reason", reason, "error", err)
}

// run runs the candidate on p's capture and keeps the trial on its item.
func (r *Runner) run(p Production, obs brainwire.ShadowObserver) {
	pc := p.Capture
	ctx, cancel := context.WithTimeout(retry.Sparing(r.base), r.cfg.Timeout)
	defer cancel()
	item, err := r.cfg.Store.GetInboxItem(ctx, pc.UserID, p.Result.InboxItemID)
	if err != nil || item.AgentRun == nil {
		r.dropped(ctx, obs, pc, r.reason(ctx, err), err)
		return
	}
	// The candidate reads the person's words as production filed them (a
	// voice capture's transcript), in a conversation of its own.
	c := brainwire.Capture{Kind: brainwire.KindText, UserID: pc.UserID, ThreadID: pc.ThreadID, RunID: "shadow-run-" + uuid.NewString(),
		Text: item.RawText, Agent: pc.Agent.WithInstructions(r.cfg.Instructions)}
	ctx, cobs := obs.StartShadow(ctx, c, pc.Trace)
	c.Trace, _ = brainwire.RunTraceFrom(ctx)
	set := tools.New(tools.Deps{Store: dryStore{}, NewID: uuid.NewString, Now: r.cfg.Now}, c)
	req := brainwire.RunRequest{UserID: c.UserID, Message: c.Text, Instructions: r.cfg.Instructions}

	a := adapter.New(c)
	var ex Excerpt
	var runErr error
	see := func(evs []brainwire.CaptureEvent) {
		for _, ev := range evs {
			ex.Add(ev)
			cobs.CaptureEvent(ev)
		}
	}
	see(a.Start(nil))
	for ev, err := range agent.NewLoop(p.Provider).Run(ctx, req, set) {
		if err != nil {
			runErr = err
			break
		}
		cobs.ProviderEvent(ev)
		see(a.Handle(ev, nil))
		if a.Done() {
			break
		}
	}
	see(a.Finish(runErr, nil))
	res := *a.Result()
	cobs.End(res)
	if res.Outcome == brainwire.OutcomeError {
		// A failure after the candidate's outcome changes nothing it filed.
		err := res.Err
		if err == nil {
			err = errors.New(res.ErrorType + ": " + res.ErrorMessage)
		}
		r.dropped(ctx, obs, pc, r.reason(ctx, err), err)
		return
	}
	t := brainwire.ShadowTrial{
		Candidate: brainwire.AgentRun{RunID: c.RunID, AgentVersion: c.Agent.Version, InstructionsHash: c.Agent.InstructionsHash,
			Model: c.Agent.Model, Outcome: res.Outcome, Bucket: res.Bucket, Confidence: res.Confidence,
			TraceID: c.Trace.TraceID, SpanID: c.Trace.SpanID},
		Production:          *item.AgentRun,
		CandidateReasoning:  ex.String(),
		ProductionReasoning: p.Reasoning,
		At:                  r.cfg.Now().UTC(),
	}
	if err := r.cfg.Store.RecordShadow(ctx, pc.UserID, item.ID, t); err != nil {
		r.dropped(ctx, obs, pc, r.reason(ctx, err), err)
		return
	}
	obs.ShadowKept(ctx, t)
	r.cfg.Logger.Info("shadow kept", "run_id", pc.RunID, "shadow_run_id", c.RunID, "candidate_version", c.Agent.Version,
		"outcome", res.Outcome, "bucket", res.Bucket, "production_outcome", t.Production.Outcome, "production_bucket", t.Production.Bucket)
}

// reason is why a shadow that failed with err under ctx is dropped.
func (r *Runner) reason(ctx context.Context, err error) string {
	var be *brainwire.Error
	switch {
	case r.base.Err() != nil:
		return brainwire.ShadowDraining
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return brainwire.ShadowTimeout
	case errors.As(err, &be) && be.Code == brainwire.EBusy:
		return brainwire.ShadowThrottled
	}
	return brainwire.ShadowFailed
}

// Excerpt gathers the start of a run's reasoning, before its outcome, up
// to brainwire.MaxShadowReasoning bytes.
type Excerpt struct{ b strings.Builder }

// Add takes ev's text if it is reasoning before the outcome.
func (e *Excerpt) Add(ev brainwire.CaptureEvent) {
	if ev.Type != brainwire.CaptureReasoning || ev.Chunk.AfterOutcome || e.b.Len() >= brainwire.MaxShadowReasoning {
		return
	}
	e.b.WriteString(textcut.Prefix(ev.Chunk.Text, brainwire.MaxShadowReasoning-e.b.Len()))
}

// String is the excerpt.
func (e *Excerpt) String() string { return e.b.String() }

// shadowObserver is o as it watches shadows (brainwire.Observers fans
// out to those of its observers that do); an observer that watches none
// is told nothing.
func shadowObserver(o brainwire.Observer) brainwire.ShadowObserver {
	if so, ok := o.(brainwire.ShadowObserver); ok {
		return so
	}
	return brainwire.Observers(nil)
}

// dryStore files nothing: the candidate's file_capture is checked as
// production's is and answered as if filed.
type dryStore struct{ brainwire.Store }

func (dryStore) File(_ context.Context, f brainwire.Filing) (brainwire.InboxItem, error) {
	return brainwire.InboxItem{ID: f.NewInboxID}, nil
}
