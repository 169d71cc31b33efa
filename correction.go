package brainwire

import (
	"context"
	"time"
)

// CorrectionKind says how a person judged an agent run.
type CorrectionKind string

// Correction kinds.
const (
	// CorrectionRecategorize: the person put the capture in a bucket
	// themselves, another one (the agent was wrong) or the agent's own
	// (they confirmed it).
	CorrectionRecategorize CorrectionKind = "recategorize"
	// CorrectionFollowUp: the person answered the agent's clarifying
	// question and a follow-up run filed the capture again.
	CorrectionFollowUp CorrectionKind = "follow_up"
)

// Correction is a person's verdict on an agent run: the ground truth the
// agent's instructions are tuned against. It is recorded as an evaluation
// of the run, linked to the run's trace.
type Correction struct {
	Kind   CorrectionKind
	UserID string
	ItemID string
	// Run is the agent run judged, as the item recorded it when the run
	// filed it; zero for an item filed before runs were recorded.
	Run AgentRun
	// Bucket is where the person put the capture (recategorize), or where
	// the follow-up filed it ("" when it filed none).
	Bucket string
	// Round is the follow-up round (follow-up only).
	Round int
	// Outcome is the follow-up run's outcome (follow-up only).
	Outcome Outcome
	// FollowUpRunID is the follow-up capture's run id (follow-up only).
	FollowUpRunID string
	// Repeat is set when the person had already put the item in a bucket
	// (recategorize only): a second thought, not their first verdict on
	// the run, so that a share of items judged counts each item once.
	Repeat bool
	// Shadow is the shadow trial run on the item's capture, if one ran
	// (recategorize only): the person's bucket scores both its arms.
	Shadow *ShadowTrial
	At     time.Time
}

// Agreed reports whether the person's bucket is the one the agent filed:
// a recategorize that confirms the agent.
func (c Correction) Agreed() bool {
	return c.Kind == CorrectionRecategorize && c.Run.Outcome.Resolved() && c.Run.Bucket == c.Bucket
}

// Resolved reports whether a follow-up put the misunderstood capture in a
// bucket.
func (c Correction) Resolved() bool {
	return c.Kind == CorrectionFollowUp && c.Outcome.Resolved()
}

// CorrectionObserver is implemented by observers that also record people's
// corrections of agent runs (telemetry: an evaluation linked to the run).
// Correction runs on the request's path: it must return quickly and never
// block on I/O.
type CorrectionObserver interface {
	Correction(ctx context.Context, c Correction)
}

// Correction implements CorrectionObserver: it tells every observer that
// records corrections.
func (os Observers) Correction(ctx context.Context, c Correction) {
	for _, o := range os {
		if co, ok := o.(CorrectionObserver); ok {
			co.Correction(ctx, c)
		}
	}
}
