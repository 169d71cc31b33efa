// Package capture runs captures: a person's thought in, its events out. A
// capture's run is the agent loop with the capture's tools, the filing,
// and the adapter that turns what the agent does into the capture's
// events, under the capture's Idempotency-Key when it has one. The HTTP
// handlers of every protocol, the evaluation and the replays all run
// captures through a Service.
package capture

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adapter"
	"github.com/brainwire/brainwire/agent"
	"github.com/brainwire/brainwire/shadow"
	"github.com/brainwire/brainwire/tools"
)

// Config is what a Service needs. Provider, Store, NewID and Now are
// required.
type Config struct {
	Provider    brainwire.Provider
	Store       brainwire.Store
	Blobs       brainwire.BlobStore
	Transcriber brainwire.Transcriber
	// Observer watches every capture; nil observes nothing.
	Observer brainwire.Observer
	// WrapTools, if set, wraps each capture's tool set (e.g. to trace
	// every tool call); it must return a set that calls through.
	WrapTools func(brainwire.ToolSet) brainwire.ToolSet
	Logger    *slog.Logger
	// Agent is the agent captures run now, recorded on each; nil: none
	// is known.
	Agent func() brainwire.AgentInfo
	// AgentName is recorded as the classifier of what the agent files.
	AgentName string
	// Instructions, when set, replace the agent's on every run.
	Instructions string
	// EvalRunID marks every capture as part of that evaluation.
	EvalRunID string
	// Shadow, when set, tries candidate instructions on the captures it
	// samples, once their stream has ended.
	Shadow     *shadow.Runner
	RunTimeout time.Duration
	NewID      func() string
	Now        func() time.Time
}

// Service runs captures.
type Service struct {
	cfg  Config
	loop *agent.Loop
	// keys are the store's idempotency keys; nil when it keeps none.
	keys brainwire.IdempotencyStore
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observer == nil {
		cfg.Observer = brainwire.Observers(nil)
	}
	if cfg.Agent == nil {
		cfg.Agent = func() brainwire.AgentInfo { return brainwire.AgentInfo{} }
	}
	s := &Service{cfg: cfg, loop: agent.NewLoop(cfg.Provider)}
	s.keys, _ = cfg.Store.(brainwire.IdempotencyStore)
	return s
}

// Request is a capture to run.
type Request struct {
	Capture brainwire.Capture
	// Key is the request's Idempotency-Key, "" when it has none;
	// Fingerprint identifies the request under it (its route and what
	// it asks for), so that another request under the key is refused.
	Key, Fingerprint string
	// Prepare, if set, runs once the key is held, before anything else
	// (AG-UI's inline audio is stored then). Its error refuses the
	// capture and gives the key back.
	Prepare func(ctx context.Context, c *brainwire.Capture) error
}

// Run is one capture, shaped as database/sql's Rows: Start opens it,
// Events reads it to the end (once), Result tells how it ended. The
// context Start was given bounds it: its end is the client going away.
type Run struct {
	s   *Service
	ctx context.Context
	c   brainwire.Capture
	// hold is the capture's claim on its Idempotency-Key; nil without one.
	hold *keyHold
	// replay, when set, is how the key's capture ended before: Events
	// tells it again and nothing runs.
	replay *brainwire.Replay
	res    brainwire.CaptureResult
	// ran is the capture as it ran; excerpt, set when a shadow samples
	// it, gathers its reasoning for the trial.
	ran     brainwire.Capture
	excerpt *shadow.Excerpt
}

// Start checks that capture req may run and claims what it runs under:
// its Idempotency-Key, then a follow-up's round. An error says why it may
// not, before any event: another request under the key (EKeyReused), its
// capture still running (ErrKeyRunning), a round taken, the store's
// failure. A repeat of a capture that ended under its key is not an
// error: its Run replays it (Replayed).
func (s *Service) Start(ctx context.Context, req Request) (*Run, error) {
	r := &Run{s: s, ctx: ctx, c: req.Capture}
	if req.Key != "" {
		if err := r.claimKey(req.Key, req.Fingerprint); err != nil {
			return nil, err
		}
		if r.replay != nil {
			return r, nil
		}
	}
	if req.Prepare != nil {
		if err := req.Prepare(ctx, &r.c); err != nil {
			r.hold.release(ctx)
			return nil, err
		}
	}
	if r.c.FollowUp != nil {
		if err := r.claimRound(); err != nil {
			r.hold.release(ctx)
			return nil, err
		}
	}
	return r, nil
}

// Capture is the capture the Run tells of: a replay's is the first run's.
func (r *Run) Capture() brainwire.Capture { return r.c }

// Replayed reports whether the Run tells again how the capture ended
// before under its key, running nothing.
func (r *Run) Replayed() bool { return r.replay != nil }

// Result is how the capture ended, once Events is done.
func (r *Run) Result() brainwire.CaptureResult { return r.res }

// Events runs the capture and yields its events: STEP_START at once, then
// what the agent's run causes, COMPLETE last. A consumer that stops (its
// client went away) stops the run; the capture still ends, as observers
// and its key are told.
func (r *Run) Events() iter.Seq[brainwire.CaptureEvent] {
	return func(yield func(brainwire.CaptureEvent) bool) {
		if r.replay != nil {
			r.replayed(yield)
			return
		}
		filed := r.run(yield)
		if fu := r.c.FollowUp; fu != nil && !r.res.Outcome.Filed() {
			// Nothing was filed: give the round back so the person can try
			// again, also when they went away (hence a context of its own).
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 15*time.Second)
			defer cancel()
			if err := r.s.cfg.Store.ReleaseFollowUp(ctx, r.c.UserID, fu.Item.ID, fu.ClaimToken); err != nil {
				r.s.cfg.Logger.Error("releasing the follow-up claim", "inbox_item_id", fu.Item.ID, "round", fu.Round, "error", err)
			}
		}
		// After the round: a retry the key lets through finds it free.
		r.hold.settle(r.ctx, r.c, r.res, filed)
		if r.excerpt != nil {
			r.s.cfg.Shadow.Offer(shadow.Production{Provider: r.s.cfg.Provider, Observer: r.s.cfg.Observer,
				Capture: r.ran, Result: r.res, Reasoning: r.excerpt.String()})
		}
	}
}

// run runs the agent for the capture, yielding its events, and returns
// whether its filing settled the capture's key. The run is bounded by the
// run timeout; a consumer that stops cancels it (the upstream run is then
// stopped).
func (r *Run) run(yield func(brainwire.CaptureEvent) bool) (keySettled bool) {
	s, c, client := r.s, r.c, r.ctx
	c.Agent, c.EvalRunID = s.cfg.Agent(), s.cfg.EvalRunID
	req := runRequest(c)
	req.Instructions = s.cfg.Instructions
	start := s.cfg.Now()
	ctx, obs := s.cfg.Observer.StartCapture(client, c)
	// The filing keeps where the run is traced, for later corrections.
	c.Trace, _ = brainwire.RunTraceFrom(ctx)
	r.ran = c
	if s.cfg.Shadow != nil && s.cfg.Shadow.Samples(c) {
		r.excerpt = new(shadow.Excerpt)
	}
	set := tools.New(tools.Deps{Store: s.cfg.Store, Blobs: s.cfg.Blobs, Transcriber: s.cfg.Transcriber,
		NewID: s.cfg.NewID, Now: s.cfg.Now, AgentName: s.cfg.AgentName}, c)
	if r.hold != nil {
		set.FileUnder(r.hold.key)
	}
	var toolSet brainwire.ToolSet = set
	if s.cfg.WrapTools != nil {
		toolSet = s.cfg.WrapTools(toolSet)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := s.cfg.Logger.With("run_id", c.RunID, "thread_id", c.ThreadID, "kind", c.Kind, "user", c.UserID)
	log.Info("capture started")

	a := adapter.New(c)
	a.Keep = func(res *brainwire.CaptureResult) error { return keepUnresolved(ctx, set, res, log) }
	// gone is set once the consumer stopped: its client is gone, and the
	// run is stopped. completed is set once it took COMPLETE, leftEarly
	// if its client had gone by then.
	var gone, completed, leftEarly bool
	var events []brainwire.CaptureEvent // reused between calls
	emit := func(evs []brainwire.CaptureEvent) {
		events = evs
		for _, ev := range evs {
			switch ev.Type {
			case brainwire.CaptureOutcome:
				ev.Result.TimeToOutcome = s.cfg.Now().Sub(start)
			case brainwire.CaptureError:
				a.Result().TimeToOutcome = s.cfg.Now().Sub(start)
			}
			obs.CaptureEvent(ev)
			if r.excerpt != nil {
				r.excerpt.Add(ev)
			}
			if gone {
				continue
			}
			complete := ev.Type == brainwire.CaptureComplete
			leftEarly = leftEarly || complete && client.Err() != nil
			if !yield(ev) {
				gone = true
				cancel()
				continue
			}
			completed = completed || complete
		}
	}
	emit(a.Start(events[:0]))

	runCtx, cancelRun := context.WithTimeout(ctx, s.cfg.RunTimeout)
	defer cancelRun()
	var runErr error
	for ev, err := range s.loop.Run(runCtx, req, toolSet) {
		if err != nil {
			runErr = err
			if errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				runErr = fmt.Errorf("run timed out after %s: %w", s.cfg.RunTimeout, context.DeadlineExceeded)
			}
			// The client hears it now, not once the run is closed
			// upstream (a cancel call of its own).
			emit(a.Finish(runErr, events[:0]))
			break
		}
		obs.ProviderEvent(ev)
		emit(a.Handle(ev, events[:0]))
		if a.Done() {
			break
		}
	}
	emit(a.Finish(runErr, events[:0]))
	// A client that left before COMPLETE was sent went away; one that
	// hangs up right after it (as the app does) did not, though by the
	// time the run is logged its request has ended either way.
	wentAway := leftEarly || gone || (!completed && client.Err() != nil)
	r.res = *a.Result()
	obs.End(r.res)
	if c.FollowUp != nil {
		s.followUpCorrection(client, c, &r.res)
	}

	attrs := []any{"outcome", r.res.Outcome, "reasoning_chunks", r.res.ReasoningChunks,
		"duration", s.cfg.Now().Sub(start).Round(time.Millisecond)}
	switch {
	case wentAway:
		log.Warn("capture ended: client went away", attrs...)
	case runErr != nil:
		log.Error("capture ended: run failed", append(attrs, "error", runErr)...)
	case r.res.Outcome == brainwire.OutcomeError:
		// The service said why in its stream (an error event, a failed
		// run): the phone has its words, the log has them too.
		log.Error("capture ended: run failed", append(attrs, "error_type", r.res.ErrorType, "error", r.res.ErrorMessage)...)
	default:
		log.Info("capture ended", attrs...)
	}
	return set.KeySettled()
}

// voiceMessage asks the agent to transcribe before it classifies; the
// `audio:` line carries the URL the transcribe_audio tool accepts.
const voiceMessage = "This is a voice capture. Call transcribe_audio with the blob_url below, " +
	"then classify the transcript and file it with file_capture.\naudio: %s"

// followUpInstructions tell the agent, for this run only, what the new
// message is: the answer to its own question, to be filed on the same item.
const followUpInstructions = "The person is answering the clarifying question you asked about " +
	"their capture (follow-up round %d of %d). Classify the capture again using their answer " +
	"and call file_capture once. If it is still unclear, mark it misunderstood with a new question."

// runRequest is what the agent is asked to do for c.
func runRequest(c brainwire.Capture) brainwire.RunRequest {
	req := brainwire.RunRequest{UserID: c.UserID, Message: c.Text}
	switch {
	case c.FollowUp != nil:
		req.ThreadID = c.UpstreamThreadID()
		req.AdditionalInstructions = fmt.Sprintf(followUpInstructions, c.FollowUp.Round, brainwire.MaxFollowUpRounds)
	case c.Kind == brainwire.KindVoice:
		req.Message = fmt.Sprintf(voiceMessage, c.AudioURL)
	}
	return req
}

// keepUnresolved keeps a capture whose run filed nothing as an unresolved
// inbox item, for a person to file, before its outcome goes out: the
// outcome then names the item. A voice capture's words are transcribed
// first if the agent never did; when they cannot be, the Failure ends the
// capture, keeping nothing. When the store fails, the outcome goes out
// without an item rather than turning a run that ended well into an ERROR.
func keepUnresolved(ctx context.Context, set *tools.Set, res *brainwire.CaptureResult, log *slog.Logger) error {
	id, err := set.KeepUnresolved(ctx, res.UpstreamThreadID)
	var f *brainwire.Failure
	switch {
	case errors.As(err, &f):
		return err
	case err != nil:
		log.Error("capture unresolved and not kept in the inbox", "error", err)
		return err
	}
	res.InboxItemID = id
	return nil
}

// followUpClaimGrace is how long a follow-up's claim on its round outlives
// the run timeout: time to file and to give the claim back. Only a server
// that died mid-run leaves a claim to lapse.
const followUpClaimGrace = 30 * time.Second

// claimRound claims the follow-up's round of its item in the store before
// anything runs: of concurrent follow-ups on the item, on this server or
// another replica, one gets it and the others a conflict.
func (r *Run) claimRound() error {
	s, fu := r.s, r.c.FollowUp
	now := s.cfg.Now()
	claim := brainwire.FollowUpClaim{Round: fu.Round, Token: uuid.NewString(), At: now,
		Until: now.Add(s.cfg.RunTimeout + followUpClaimGrace)}
	item, err := s.cfg.Store.ClaimFollowUp(r.ctx, r.c.UserID, fu.Item.ID, claim)
	if err != nil {
		return err
	}
	r.c.FollowUp = &brainwire.FollowUp{Item: item, Round: fu.Round, ClaimToken: claim.Token}
	return nil
}

// Correction tells the observers that record corrections about one.
func (s *Service) Correction(ctx context.Context, c brainwire.Correction) {
	if co, ok := s.cfg.Observer.(brainwire.CorrectionObserver); ok {
		co.Correction(ctx, c)
	}
	s.cfg.Logger.Info("correction", "kind", c.Kind, "item", c.ItemID, "agent_run", c.Run.RunID, "agent_version", c.Run.AgentVersion,
		"agent_outcome", c.Run.Outcome, "agent_bucket", c.Run.Bucket, "bucket", c.Bucket, "round", c.Round, "outcome", c.Outcome)
}

// followUpCorrection records what a follow-up made of the misunderstood
// capture it answered: an evaluation of the run that asked.
func (s *Service) followUpCorrection(ctx context.Context, c brainwire.Capture, res *brainwire.CaptureResult) {
	fu := c.FollowUp
	// Only a misunderstood item takes a follow-up; one filed before runs
	// were recorded still says what the agent guessed.
	run := brainwire.AgentRun{Outcome: brainwire.OutcomeMisunderstood}
	if cm := fu.Item.ClassificationMeta; cm != nil {
		run.Bucket, run.Confidence = cm.Bucket, cm.Confidence
	}
	if fu.Item.AgentRun != nil {
		run = *fu.Item.AgentRun
	}
	bucket := ""
	if res.Outcome.Resolved() {
		bucket = res.Bucket
	}
	s.Correction(ctx, brainwire.Correction{
		Kind: brainwire.CorrectionFollowUp, UserID: c.UserID, ItemID: fu.Item.ID, Run: run,
		Bucket: bucket, Round: fu.Round, Outcome: res.Outcome, FollowUpRunID: c.RunID, At: s.cfg.Now(),
	})
}

// Capture runs c, without an Idempotency-Key, to its end, and returns how
// it ended: a capture as the evaluation runs it.
func (s *Service) Capture(ctx context.Context, c brainwire.Capture) (brainwire.CaptureResult, error) {
	run, err := s.Start(ctx, Request{Capture: c})
	if err != nil {
		return brainwire.CaptureResult{}, err
	}
	for range run.Events() {
	}
	return run.Result(), nil
}
