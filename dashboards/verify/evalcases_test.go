package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// evalAccuracy is the panel of evaluations' accuracy, by version and run.
const evalAccuracy = "Evaluation accuracy by version and run"

// evalCase is one run of a case of an evaluation, right or wrong as its
// report says.
type evalCase struct {
	evalRunID, version string
	correct            bool
	at                 time.Time // when the evaluation began
}

// evalCasesOf reads every case run of an evaluation's report (JSON):
// each trial of each case of each pass, with its pass's version and
// whether it was right. Each pass must have runs runs.
func evalCasesOf(rep map[string]any, id string, runs int, at time.Time) ([]evalCase, error) {
	var out []evalCase
	for results, pass := range map[string]string{"results": "candidate", "baseline_results": "baseline"} {
		p, _ := rep[pass].(map[string]any)
		version := str(p["agent_version"])
		rs, _ := rep[results].([]any)
		if version == "" || len(rs) != runs {
			return nil, fmt.Errorf("eval %s: %s has version %q and %d runs, want %d", id, pass, version, len(rs), runs)
		}
		for _, x := range rs {
			r, _ := x.(map[string]any)
			correct, ok := r["correct"].(bool)
			if !ok {
				return nil, fmt.Errorf("eval %s: a run of %s without correct: %v", id, pass, r)
			}
			out = append(out, evalCase{evalRunID: id, version: version, correct: correct, at: at})
		}
	}
	return out, nil
}

// evalAccuracyTruth is the share of the selected evaluations' case runs
// that were right, by version and evaluation run.
func evalAccuracyTruth(tr *truth, sel selection) map[string]float64 {
	right, all := map[string]float64{}, map[string]float64{}
	for _, c := range tr.evalCases {
		if !sel.ran("brainwire-eval", c.version) || !sel.has("eval_run", c.evalRunID) {
			continue
		}
		k := key(c.version, c.evalRunID)
		all[k]++
		if c.correct {
			right[k]++
		}
	}
	for k := range all {
		right[k] /= all[k]
	}
	return right
}

// checkEvalRunOptions checks the evaluation run variable's options as
// Grafana reads them per service: the two evaluations' run ids for
// brainwire-eval and All, none for brainwire (serve runs no evaluation).
// It also checks that the evaluations had runs right and wrong.
func checkEvalRunOptions(t *testing.T, ctx context.Context, p *prometheus, tr *truth, vars map[string]variable, jobs []string) {
	t.Helper()
	if len(tr.evalRuns) != 2 {
		t.Fatalf("evaluations %v, want two", tr.evalRuns)
	}
	// Right and wrong runs both, so that a panel cannot pass on a share
	// of 1 (or 0) whatever it counts.
	seen := map[bool]bool{}
	for _, c := range tr.evalCases {
		seen[c.correct] = true
	}
	if !seen[true] || !seen[false] {
		t.Errorf("the evaluations' case runs are all right or all wrong (%d runs): the workload does not cover the accuracy panel", len(tr.evalCases))
	}
	for _, job := range jobs {
		got, err := p.labelValues(ctx, "brainwire_eval_run_id", interpolate(`brainwire_eval_cases_total{job=~"$job"}`, vars, selection{"job": {job}}, nil))
		if err != nil {
			t.Fatal(err)
		}
		want := sorted(tr.evalRuns)
		if job == "brainwire" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("evaluation run options for %s: %v, want %v", job, got, want)
		}
	}
}

// logEvalAccuracy shows each evaluation's truth, right of all case runs by
// version, beside what the panel shows of it over the whole workload.
func logEvalAccuracy(t *testing.T, ctx context.Context, p *prometheus, tr *truth, vars map[string]variable) {
	t.Helper()
	at := time.Now()
	seconds := math.Floor(at.Sub(tr.start.Add(-5 * time.Second)).Seconds())
	sel := selection{"job": {"brainwire-eval"}, "version": {allValue}, "eval_run": {allValue}}
	shown := map[string]float64{}
	if q := panelQueries(t)[evalAccuracy]; len(q) > 0 {
		rs, err := p.queryAt(ctx, interpolate(q[0], vars, sel, rangeBuiltins(time.Duration(seconds)*time.Second)), at)
		if err != nil {
			t.Errorf("%s: %v", evalAccuracy, err)
		}
		shown = rowsOf(rs, []string{"gen_ai_agent_version", "brainwire_eval_run_id"}, ratio, seconds)
	}
	for _, id := range tr.evalRuns {
		for _, v := range []string{tr.v1, tr.v2} {
			right, all := 0, 0
			for _, c := range tr.evalCases {
				if c.evalRunID == id && c.version == v {
					all++
					if c.correct {
						right++
					}
				}
			}
			t.Logf("evaluation %s, version %s: %d of %d case runs right (%.4f); the panel shows %.4f",
				id, v, right, all, float64(right)/float64(max(all, 1)), shown[key(v, id)])
		}
	}
}
