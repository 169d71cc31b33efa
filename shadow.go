package brainwire

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// ShadowTrial is what candidate instructions made of a capture in shadow:
// the candidate's run beside the production run that filed the item, on
// the very same capture. The candidate's tools record what it would have
// filed and file nothing; the item keeps the trial so that the person's
// later word on it scores both arms.
type ShadowTrial struct {
	// Candidate is the shadow run: AgentVersion and InstructionsHash are
	// the candidate instructions', RunID its own run id, TraceID/SpanID
	// its own trace (linked to the production run's).
	Candidate AgentRun `json:"candidate"`
	// Production is the production run it is paired with, as the item
	// recorded it when the trial ran.
	Production AgentRun `json:"production"`
	// CandidateReasoning and ProductionReasoning are the start of each
	// arm's chain-of-thought (at most MaxShadowReasoning bytes), for a
	// person reading why the arms disagree; the traces hold all of it.
	CandidateReasoning  string    `json:"candidateReasoning,omitempty"`
	ProductionReasoning string    `json:"productionReasoning,omitempty"`
	At                  time.Time `json:"at"`
}

// FiledIn is the bucket the run put the capture in: its bucket when its
// outcome resolved the capture (classified, low confidence), "" when it
// asked the person or filed nothing, whatever bucket it guessed.
func (r AgentRun) FiledIn() string {
	if r.Outcome.Resolved() {
		return r.Bucket
	}
	return ""
}

// Agree reports whether the trial's arms leave the person with the same
// filing: the capture in the same bucket, or neither arm filing it (two
// questions agree, whatever each guessed). The dashboard's agreement and
// the report's count by it.
func (t ShadowTrial) Agree() bool { return t.Production.FiledIn() == t.Candidate.FiledIn() }

// MaxShadowReasoning bounds each arm's reasoning excerpt in a ShadowTrial.
const MaxShadowReasoning = 1200

// ShadowStore is implemented by stores that keep shadow trials on their
// items.
type ShadowStore interface {
	// RecordShadow keeps t on the item (replacing a trial it had): ENotFound
	// for an unknown item. It changes nothing else about the item, its
	// UpdatedAt included: a trial is not the person's or the agent's word.
	RecordShadow(ctx context.Context, userID, itemID string, t ShadowTrial) error
}

// ShadowSampled reports whether the capture with run id runID is among the
// fraction of captures a shadow trial samples: the first 8 bytes of the
// SHA-256 of the run id, read as a number in [0, 1), fall below fraction.
// Anyone holding a run id (the phone's COMPLETE carries it) can tell
// whether its capture was sampled.
func ShadowSampled(runID string, fraction float64) bool {
	if fraction <= 0 {
		return false
	}
	if fraction >= 1 {
		return true
	}
	sum := sha256.Sum256([]byte(runID))
	return float64(binary.BigEndian.Uint64(sum[:8]))/(1<<64) < fraction
}

// Why a sampled capture's shadow run was dropped (ShadowObserver.ShadowDropped).
const (
	ShadowBusy      = "busy"      // the shadows' concurrency limit was reached
	ShadowThrottled = "throttled" // the agent service pushed back (429)
	ShadowDraining  = "draining"  // the server was stopping
	ShadowTimeout   = "timeout"   // the shadow's own timeout ran out
	ShadowFailed    = "failed"    // the run failed, or its trial could not be kept
)

// ShadowObserver is implemented by observers that watch shadow trials. A
// shadow run is observed apart from production, its own trace linked to
// the production run's and its own counts, so that no production figure
// ever includes it.
type ShadowObserver interface {
	// StartShadow is called before a shadow run: c is the capture as the
	// candidate runs it (its RunID the shadow's own, Agent the candidate),
	// production where the production run is traced.
	StartShadow(ctx context.Context, c Capture, production TraceRef) (context.Context, CaptureObserver)
	// ShadowKept is called once a trial is kept on its item.
	ShadowKept(ctx context.Context, t ShadowTrial)
	// ShadowDropped counts a sampled capture whose shadow was not kept,
	// and why (ShadowBusy, ...).
	ShadowDropped(ctx context.Context, reason string)
}
