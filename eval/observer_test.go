package eval_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
)

// caseRuns is a CaseObserver that counts what it is told.
type caseRuns struct {
	mu sync.Mutex
	n  map[string]int // by "version run-id correct"
}

func (o *caseRuns) EvalCaseRun(_ context.Context, version, evalRunID string, correct bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[fmt.Sprintf("%s %s %v", version, evalRunID, correct)]++
}

// TestRunTellsEachCaseRun checks that the observer hears of every run of
// every case, trials each, with its pass's version, the evaluation's run
// id and whether the run was right as the report counts it: a case that
// expects a bucket is right only when filed there, one that expects a
// misunderstanding only when misunderstood, whatever it guessed.
func TestRunTellsEachCaseRun(t *testing.T) {
	cases := []eval.Case{
		{ID: "people", Text: "people", ExpectedBucket: "People"},
		{ID: "ideas", Text: "ideas", ExpectedBucket: "Ideas"},
		{ID: "unclear", Text: "unclear", ExpectedOutcome: brainwire.OutcomeMisunderstood},
	}
	// What each set of instructions makes of each text: the baseline
	// files all in People (people right; ideas wrong; unclear wrong,
	// filed), the candidate files ideas right, asks about unclear (right,
	// its guess People notwithstanding) and fails people (wrong).
	answers := map[string]map[string]brainwire.CaptureResult{
		"base": {
			"people":  {Outcome: brainwire.OutcomeClassified, Bucket: "People", Confidence: 0.9},
			"ideas":   {Outcome: brainwire.OutcomeLowConfidence, Bucket: "People", Confidence: 0.5},
			"unclear": {Outcome: brainwire.OutcomeClassified, Bucket: "People", Confidence: 0.8},
		},
		"cand": {
			"people":  {Outcome: brainwire.OutcomeError},
			"ideas":   {Outcome: brainwire.OutcomeClassified, Bucket: "Ideas", Confidence: 0.9},
			"unclear": {Outcome: brainwire.OutcomeMisunderstood, Bucket: "People", Confidence: 0.3},
		},
	}
	open := func(_ context.Context, instructions string, obs brainwire.Observer) (eval.Target, error) {
		run := captureFunc(func(ctx context.Context, c brainwire.Capture) (brainwire.CaptureResult, error) {
			_, co := obs.StartCapture(ctx, c)
			res := answers[instructions][c.Text]
			co.End(res)
			return res, nil
		})
		return eval.Target{Captures: run, Agent: brainwire.AgentInfo{Version: "v-" + instructions}}, nil
	}
	obs := &caseRuns{n: map[string]int{}}
	passes, err := eval.Run(t.Context(), eval.Config{Cases: cases, RunID: "eval-o", Trials: 2, Observer: obs}, open,
		eval.Side{Label: "base", Instructions: "base"}, eval.Side{Label: "cand", Instructions: "cand"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"v-base eval-o true": 2, "v-base eval-o false": 4,
		"v-cand eval-o true": 4, "v-cand eval-o false": 2,
	}
	if !maps.Equal(obs.n, want) {
		t.Errorf("case runs told %v, want %v", obs.n, want)
	}
	// The report's own count agrees.
	for _, p := range passes {
		m := eval.Summarize(p.Results)
		right, all := obs.n[fmt.Sprintf("%s eval-o true", p.Agent.Version)], 0
		for k, n := range obs.n {
			var v, id string
			var c bool
			if _, err := fmt.Sscanf(k, "%s %s %t", &v, &id, &c); err == nil && v == p.Agent.Version {
				all += n
			}
		}
		if right != m.Correct || all != m.Cases {
			t.Errorf("%s: told %d right of %d, the report counts %d of %d", p.Agent.Version, right, all, m.Correct, m.Cases)
		}
	}
}
