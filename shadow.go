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
