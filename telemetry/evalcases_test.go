package telemetry_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

var _ eval.CaseObserver = (*telemetry.Telemetry)(nil)

// TestEvalCasesCountRightAndWrong runs two evaluations of two versions
// through eval's runner with telemetry as its case observer, exporting to
// an in-process OTLP receiver: brainwire.eval.cases counts every case run
// (each trial) by version, evaluation run id and whether it was right, as
// the report does; each evaluation's versions have both series from their
// first capture, at zero until counted; and a serving process's capture
// declares none.
func TestEvalCasesCountRightAndWrong(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	s := newStack(t, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": recv.Endpoint()})
	cases := []eval.Case{
		{ID: "people", Text: "people", ExpectedBucket: "People"},
		{ID: "ideas", Text: "ideas", ExpectedBucket: "Ideas"},
		{ID: "unclear", Text: "unclear", ExpectedOutcome: brainwire.OutcomeMisunderstood},
	}
	// v1 files everything in People: one case of three right. The others
	// file everything else in Ideas and ask about unclear: two of three.
	answer := func(version, text string) brainwire.CaptureResult {
		switch {
		case version == "v1":
			return brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, Bucket: "People", Confidence: 0.9}
		case text != "unclear":
			return brainwire.CaptureResult{Outcome: brainwire.OutcomeLowConfidence, Bucket: "Ideas", Confidence: 0.5}
		default:
			return brainwire.CaptureResult{Outcome: brainwire.OutcomeMisunderstood, Bucket: "People", Confidence: 0.3}
		}
	}
	evaluate := func(runID string, trials int, versions ...string) []*eval.Pass {
		// The capture service tells telemetry and then eval's observer of
		// each capture, as wiring composes them.
		open := func(_ context.Context, version string, obs brainwire.Observer) (eval.Target, error) {
			run := captureFunc(func(ctx context.Context, c brainwire.Capture) (brainwire.CaptureResult, error) {
				c.EvalRunID, c.Agent = runID, brainwire.AgentInfo{Version: version}
				ctx, tco := s.tel.StartCapture(ctx, c)
				_, co := obs.StartCapture(ctx, c)
				res := answer(version, c.Text)
				tco.End(res)
				co.End(res)
				return res, nil
			})
			return eval.Target{Captures: run, Agent: brainwire.AgentInfo{Version: version}}, nil
		}
		var sides []eval.Side
		for _, v := range versions {
			sides = append(sides, eval.Side{Label: v, Instructions: v})
		}
		passes, err := eval.Run(t.Context(), eval.Config{Cases: cases, RunID: runID, Trials: trials, Observer: s.tel}, open, sides...)
		if err != nil {
			t.Fatal(err)
		}
		return passes
	}
	passes := append(evaluate("eval-a", 2, "v1", "v2"), evaluate("eval-b", 1, "v2")...)
	_, co := s.tel.StartCapture(t.Context(), brainwire.Capture{Kind: brainwire.KindText, RunID: "served", Agent: brainwire.AgentInfo{Version: "v3"}})
	co.End(answer("v3", "ideas"))
	if err := s.shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	m := recv.Metric(telemetry.MetricEvalCases)
	if m == nil || !m.GetSum().GetIsMonotonic() {
		t.Fatalf("%s: %v, want a counter", telemetry.MetricEvalCases, m)
	}
	got := map[string]int64{}
	for _, dp := range m.GetSum().GetDataPoints() {
		a := func(k string) any { return telemetrytest.Attr(dp.Attributes, k) }
		k := fmt.Sprintf("%v %v %v", a("gen_ai.agent.version"), a("brainwire.eval.run_id"), a("brainwire.eval.correct"))
		if _, dup := got[k]; dup || len(dp.Attributes) != 3 {
			t.Errorf("point %v: a series twice, or attributes beyond version, run id and correct", dp.Attributes)
		}
		got[k] = dp.GetAsInt()
	}
	want := map[string]int64{
		"v1 eval-a true": 2, "v1 eval-a false": 4, // three cases, two trials each
		"v2 eval-a true": 4, "v2 eval-a false": 2,
		"v2 eval-b true": 2, "v2 eval-b false": 1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("case runs %v, want %v", got, want)
	}
	// What the reports say of each pass.
	for i, p := range passes {
		runID := []string{"eval-a", "eval-a", "eval-b"}[i]
		sum := eval.Summarize(p.Results)
		right, wrong := got[fmt.Sprintf("%s %s true", p.Agent.Version, runID)], got[fmt.Sprintf("%s %s false", p.Agent.Version, runID)]
		if right != int64(sum.Correct) || right+wrong != int64(sum.Cases) {
			t.Errorf("%s in %s: counted %d right of %d, the report %d of %d", p.Agent.Version, runID, right, right+wrong, sum.Correct, sum.Cases)
		}
	}

	// A version all of whose runs are right still has its wrong series,
	// at zero, from its first capture on.
	recv2 := telemetrytest.NewReceiver(t)
	s2 := newStack(t, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": recv2.Endpoint()})
	ctx, tco := s2.tel.StartCapture(t.Context(), brainwire.Capture{Kind: brainwire.KindText, RunID: "r", EvalRunID: "eval-c", Agent: brainwire.AgentInfo{Version: "v4"}})
	tco.End(answer("v4", "ideas"))
	s2.tel.EvalCaseRun(ctx, "v4", "eval-c", true)
	if err := s2.shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	m = recv2.Metric(telemetry.MetricEvalCases)
	for correct, n := range map[bool]int64{true: 1, false: 0} {
		series := map[string]any{"gen_ai.agent.version": "v4", "brainwire.eval.run_id": "eval-c", "brainwire.eval.correct": correct}
		if pointStart(m, series).IsZero() || counterValue(m, series) != n {
			t.Errorf("series %v: start %v, value %d, want %d", series, pointStart(m, series), counterValue(m, series), n)
		}
	}
}

// captureFunc is an eval.Capturer in a function.
type captureFunc func(context.Context, brainwire.Capture) (brainwire.CaptureResult, error)

func (f captureFunc) Capture(ctx context.Context, c brainwire.Capture) (brainwire.CaptureResult, error) {
	return f(ctx, c)
}
