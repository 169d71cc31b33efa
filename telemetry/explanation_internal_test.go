package telemetry

import (
	"testing"

	"github.com/brainwire/brainwire"
)

// TestEvaluationExplanations pins what a person reads of a correction in
// the Corrections table: what the agent decided, then the person's bucket.
func TestEvaluationExplanations(t *testing.T) {
	for _, c := range []struct {
		run         brainwire.AgentRun
		bucket      string
		label, want string
	}{
		{brainwire.AgentRun{Outcome: brainwire.OutcomeClassified, Bucket: "People"}, "Ideas", ScoreIncorrect, "People -> Ideas"},
		{brainwire.AgentRun{Outcome: brainwire.OutcomeLowConfidence, Bucket: "Admin"}, "Admin", ScoreCorrect, "Admin -> Admin"},
		{brainwire.AgentRun{Outcome: brainwire.OutcomeMisunderstood, Bucket: "Ideas"}, "People", ScoreIncorrect, "misunderstood (Ideas?) -> People"},
		{brainwire.AgentRun{Outcome: brainwire.OutcomeUnresolved}, "Admin", ScoreIncorrect, "unresolved -> Admin"},
		{brainwire.AgentRun{}, "Admin", ScoreIncorrect, "no bucket -> Admin"},
	} {
		e := evaluationOf(brainwire.Correction{Kind: brainwire.CorrectionRecategorize, Run: c.run, Bucket: c.bucket})
		if e.explanation != c.want || e.label != c.label {
			t.Errorf("%+v to %s: %q (%s), want %q (%s)", c.run, c.bucket, e.explanation, e.label, c.want, c.label)
		}
	}
}
