package verify

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// Bucket boundaries of brainwire's histograms (telemetry/metrics.go).
var (
	confidenceBounds = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1}
	outcomeBounds    = []float64{0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 13, 20, 30, 60}
	chunkBounds      = []float64{1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000}
)

// valueKind says how a panel's numbers relate to the ground truth.
type valueKind int

const (
	counts    valueKind = iota // exact counts over the range
	perMinute                  // counts over the window, per minute
	ratio                      // a share or a mean: exact up to float rounding
	quantile                   // histogram_quantile of exact bucket counts
)

// panelTruth is what one panel query must show under a selection: a value
// per row, rows keyed by the values of the labels in by. ok is false when
// the truth cannot be known exactly for this selection (a time to outcome
// within a millisecond of a bucket bound).
type panelTruth struct {
	title string
	ref   int // the target's index in the panel
	// honours are the variables the query must filter by; the others do
	// not apply to the metric, and the panel's description says so.
	honours []string
	by      []string
	kind    valueKind
	want    func(tr *truth, sel selection) (rows map[string]float64, ok bool)
}

// Variables a panel honours.
var (
	allVars  = []string{"job", "version", "bucket", "outcome", "kind"}
	noBucket = []string{"job", "version", "outcome", "kind"}
	byRun    = []string{"job", "version"}
)

// runsOf are the runs a selection's capture filters keep.
func runsOf(tr *truth, sel selection, vars ...string) []run {
	var out []run
	for _, r := range tr.runs {
		if !sel.has("job", r.job) || !sel.has("version", r.version) {
			continue
		}
		if slices.Contains(vars, "kind") && !sel.has("kind", r.kind) {
			continue
		}
		if slices.Contains(vars, "outcome") && !sel.has("outcome", r.outcome) {
			continue
		}
		if slices.Contains(vars, "bucket") && !sel.hasBucket(r.bucket) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func key(parts ...string) string { return strings.Join(parts, " ") }

func leKey(b float64) string { return strconv.FormatFloat(b, 'g', -1, 64) }

func isFiled(o string) bool { return o == "classified" || o == "low_confidence" }

// filedBucket is the bucket a corrected run filed the capture in: a
// misunderstood, unresolved or failed run filed nothing, whatever it
// guessed.
func filedBucket(c correction) string {
	if !isFiled(c.agentOutcome) {
		return "not filed"
	}
	return c.agentBucket
}

// bucketQuantile is Prometheus's histogram_quantile of cumulative bucket
// counts (promql.BucketQuantile for classic buckets).
func bucketQuantile(q float64, bounds []float64, cum []float64) float64 {
	obs := cum[len(cum)-1]
	if obs == 0 {
		return math.NaN()
	}
	rank := q * obs
	b := sort.Search(len(cum)-1, func(i int) bool { return cum[i] >= rank })
	if b == len(cum)-1 {
		return bounds[len(bounds)-1]
	}
	start, end, count := 0.0, bounds[b], cum[b]
	if b > 0 {
		start = bounds[b-1]
		count -= cum[b-1]
		rank -= cum[b-1]
	}
	return start + (end-start)*(rank/count)
}

// quantileByVersion is the quantile of value over the selected runs, per
// version, from bucket counts as the histogram has them; not ok when a
// value is too close to a bound to say which bucket it fell in, or when
// the quantile sits on a step that float rounding decides.
func quantileByVersion(q float64, bounds []float64, runs []run, value func(run) (v float64, ambiguous bool)) (map[string]float64, bool) {
	cums := map[string][]float64{}
	for _, r := range runs {
		v, amb := value(r)
		if amb {
			return nil, false
		}
		c := cums[r.version]
		if c == nil {
			c = make([]float64, len(bounds)+1)
			cums[r.version] = c
		}
		for i := range c {
			if i == len(bounds) || v <= bounds[i] {
				c[i]++
			}
		}
	}
	out := map[string]float64{}
	for v, c := range cums {
		// A rank on a bucket's cumulative count with an empty bucket
		// above it is a step: summed rates round it to either side.
		rank := q * c[len(c)-1]
		for i := 0; i+1 < len(c); i++ {
			if math.Abs(rank-c[i]) < 1e-9*c[len(c)-1] && c[i+1] == c[i] {
				return nil, false
			}
		}
		out[v] = bucketQuantile(q, bounds, c)
	}
	return out, true
}

// timeToOutcome is a run's time to outcome in seconds. The trace has it in
// whole milliseconds and the histogram the exact seconds: within a
// millisecond of a bound, the bucket is not known.
func timeToOutcome(r run) (float64, bool) {
	for _, b := range outcomeBounds {
		if d := float64(r.ttoMS) - b*1000; d >= -1 && d <= 1 {
			return 0, true
		}
	}
	return float64(r.ttoMS) / 1000, false
}

// shadowVars are the variables the shadow trial's panels honour.
var shadowVars = []string{"job", "candidate"}

// shadowTrialsOf are the trials a selection keeps: every shadowed replica
// is a brainwire service running the one candidate.
func shadowTrialsOf(tr *truth, sel selection) []shadowTrial {
	if !sel.has("job", "brainwire") || !sel.has("candidate", tr.candidate) {
		return nil
	}
	return tr.shadowTrials
}

// upstreamErrors is the panel of errors that reached the capture (A) and
// failed attempts sent again (B).
const upstreamErrors = "Upstream errors in range: reached the capture, and retried"

var panels = []panelTruth{
	{title: "Outcome rate by version", honours: allVars, by: []string{"gen_ai_agent_version", "brainwire_capture_outcome"}, kind: ratio,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			all := tally(runsOf(tr, sel, "kind"), nil, func(r run) string { return r.version })
			rows := tally(runsOf(tr, sel, "kind", "outcome", "bucket"), nil, func(r run) string { return key(r.version, r.outcome) })
			for k := range rows {
				rows[k] /= all[strings.Fields(k)[0]]
			}
			return rows
		})},
	{title: "Outcomes in range by version", honours: allVars, by: []string{"gen_ai_agent_version", "brainwire_capture_outcome"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(runsOf(tr, sel, "kind", "outcome", "bucket"), nil, func(r run) string { return key(r.version, r.outcome) })
		})},
	{title: "Filed by bucket", honours: allVars, by: []string{"brainwire_capture_bucket", "brainwire_capture_outcome"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(runsOf(tr, sel, "kind", "outcome", "bucket"), func(r run) bool { return isFiled(r.outcome) },
				func(r run) string { return key(r.bucket, r.outcome) })
		})},
	{title: "Confidence by outcome", honours: allVars, by: []string{"le", "brainwire_capture_outcome"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return cumulative(runsOf(tr, sel, "kind", "outcome", "bucket"), append(confidenceBounds, math.Inf(1)),
				func(r run) bool { return r.hasConfidence }, func(r run, le string) string { return key(le, r.outcome) })
		})},
	{title: "Low-confidence captures per minute (click an exemplar to open the run)", honours: allVars, by: []string{"le"}, kind: perMinute,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return cumulative(runsOf(tr, sel, "kind", "outcome", "bucket"), confidenceBounds[:6],
				func(r run) bool { return r.outcome == "low_confidence" }, func(_ run, le string) string { return le })
		})},
	{title: "Correction rate by version", honours: []string{"job", "version", "bucket"}, by: []string{"gen_ai_agent_version"}, kind: ratio,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			filed := tally(runsOf(tr, sel, "bucket"), func(r run) bool { return isFiled(r.outcome) }, func(r run) string { return r.version })
			rows := tally(tr.corrections, func(c correction) bool {
				return sel.ran(c.job, c.version) && isFiled(c.agentOutcome) && sel.has("bucket", c.agentBucket) && c.label() == "incorrect" && !c.repeat
			}, func(c correction) string { return c.version })
			for v := range rows {
				rows[v] /= filed[v]
			}
			return rows
		})},
	{title: "Agent vs person", honours: []string{"job", "version", "outcome", "bucket"}, by: []string{"brainwire_correction_agent_outcome", "brainwire_correction_agent_bucket", "brainwire_correction_human_bucket"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(tr.corrections, func(c correction) bool {
				return sel.ran(c.job, c.version) && sel.has("outcome", c.agentOutcome) && sel.has("bucket", c.human)
			},
				func(c correction) string { return key(c.agentOutcome, filedBucket(c), c.human) })
		})},
	{title: "Misunderstood captures resolved by follow-up", honours: []string{"job", "version", "outcome"}, by: []string{"brainwire_follow_up_round", "brainwire_follow_up_outcome"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(tr.followUps, func(f followUp) bool { return sel.ran(f.job, f.version) && sel.has("outcome", f.outcome) },
				func(f followUp) string { return key(strconv.Itoa(f.round), f.outcome) })
		})},
	{title: "Tokens per capture by version", honours: byRun, by: []string{"gen_ai_agent_version", "gen_ai_token_type"}, kind: ratio,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			rows, n := map[string]float64{}, map[string]float64{}
			for _, r := range runsOf(tr, sel) {
				if r.hasUsage {
					rows[key(r.version, "input")] += float64(r.inTokens)
					rows[key(r.version, "output")] += float64(r.outTokens)
					n[r.version]++
				}
			}
			for k := range rows {
				rows[k] /= n[strings.Fields(k)[0]]
			}
			return rows
		})},
	{title: "Time to outcome (p50, p95) by version", ref: 0, honours: noBucket, by: []string{"gen_ai_agent_version"}, kind: quantile,
		want: func(tr *truth, sel selection) (map[string]float64, bool) {
			return quantileByVersion(0.5, outcomeBounds, runsOf(tr, sel, "kind", "outcome"), timeToOutcome)
		}},
	{title: "Time to outcome (p50, p95) by version", ref: 1, honours: noBucket, by: []string{"gen_ai_agent_version"}, kind: quantile,
		want: func(tr *truth, sel selection) (map[string]float64, bool) {
			return quantileByVersion(0.95, outcomeBounds, runsOf(tr, sel, "kind", "outcome"), timeToOutcome)
		}},
	{title: "Tool errors per minute", honours: byRun, by: []string{"gen_ai_tool_name", "error_type"}, kind: perMinute,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(tr.toolErrors, func(e toolError) bool { return sel.ran(e.job, e.version) }, func(e toolError) string { return key(e.tool, e.errType) })
		})},
	{title: upstreamErrors, ref: 0, honours: byRun, by: []string{"error_type", "brainwire_upstream_error_source"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(tr.upstream, func(e upstreamError) bool { return !e.retried && sel.ran(e.job, e.version) },
				func(e upstreamError) string { return key(e.errType, e.source) })
		})},
	{title: upstreamErrors, ref: 1, honours: byRun, by: []string{"error_type"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(tr.upstream, func(e upstreamError) bool { return e.retried && sel.ran(e.job, e.version) }, func(e upstreamError) string { return e.errType })
		})},
	{title: "Upstream retries in range", honours: byRun, by: []string{"gen_ai_operation_name", "brainwire_upstream_retry_status"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(tr.retries, func(r upstreamRetry) bool { return sel.ran(r.job, r.version) }, func(r upstreamRetry) string { return key(r.op, r.status) })
		})},
	{title: "Replayed captures in range", honours: []string{"job", "outcome", "kind"}, by: []string{"brainwire_capture_outcome", "brainwire_capture_kind"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(tr.replays, func(r replay) bool {
				return sel.has("job", r.job) && sel.has("outcome", r.outcome) && sel.has("kind", r.kind)
			},
				func(r replay) string { return key(r.outcome, r.kind) })
		})},
	{title: "Reasoning chunks per capture (p50, p95) by version", ref: 0, honours: noBucket, by: []string{"gen_ai_agent_version"}, kind: quantile,
		want: func(tr *truth, sel selection) (map[string]float64, bool) {
			return quantileByVersion(0.5, chunkBounds, runsOf(tr, sel, "kind", "outcome"), chunksOf)
		}},
	{title: "Reasoning chunks per capture (p50, p95) by version", ref: 1, honours: noBucket, by: []string{"gen_ai_agent_version"}, kind: quantile,
		want: func(tr *truth, sel selection) (map[string]float64, bool) {
			return quantileByVersion(0.95, chunkBounds, runsOf(tr, sel, "kind", "outcome"), chunksOf)
		}},
	{title: "Open capture streams", honours: []string{"job", "kind"}, by: nil, kind: counts, want: none},
	{title: "Telemetry health", ref: 0, honours: []string{"job"}, by: []string{"brainwire_appinsights_drop_reason"}, kind: perMinute, want: none},
	{title: "Telemetry health", ref: 1, honours: []string{"job"}, by: nil, kind: perMinute,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(tr.aiItems, func(time.Time) bool { return sel.has("job", "brainwire") }, func(time.Time) string { return "" })
		})},
	// The shadowed replicas' limit is above anything the workload sends at
	// once, so a shadow is dropped only when the simulator refuses it.
	{title: "Shadow agreement with production by candidate", honours: shadowVars, by: []string{"brainwire_shadow_version"}, kind: ratio,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			trials := shadowTrialsOf(tr, sel)
			if len(trials) == 0 {
				return nil
			}
			agreed := tally(trials, shadowTrial.agree, func(shadowTrial) string { return tr.candidate })
			return map[string]float64{tr.candidate: agreed[tr.candidate] / float64(len(trials))}
		})},
	{title: "Shadow trials filed by bucket, each arm", ref: 0, honours: shadowVars, by: []string{"brainwire_shadow_version", "brainwire_shadow_candidate_bucket"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(shadowTrialsOf(tr, sel), nil, func(s shadowTrial) string { return key(tr.candidate, cmp.Or(s.candidate, "not filed")) })
		})},
	{title: "Shadow trials filed by bucket, each arm", ref: 1, honours: shadowVars, by: []string{"brainwire_shadow_version", "brainwire_shadow_production_bucket"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(shadowTrialsOf(tr, sel), nil, func(s shadowTrial) string { return key(tr.candidate, cmp.Or(s.production, "not filed")) })
		})},
	{title: "Shadow accuracy on corrected captures, each arm", honours: shadowVars, by: []string{"brainwire_shadow_arm", "brainwire_shadow_version"}, kind: ratio,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			if !sel.has("job", "brainwire") || !sel.has("candidate", tr.candidate) {
				return nil
			}
			all := tally(tr.shadowScores, nil, func(s shadowScore) string { return key(s.arm, tr.candidate) })
			rows := tally(tr.shadowScores, func(s shadowScore) bool { return s.correct }, func(s shadowScore) string { return key(s.arm, tr.candidate) })
			for k, n := range all {
				rows[k] /= n // an arm never right is a row of 0
			}
			return rows
		})},
	{title: "Dropped shadows in range by reason", honours: []string{"job"}, by: []string{"reason"}, kind: counts,
		want: exact(func(tr *truth, sel selection) map[string]float64 {
			return tally(tr.shadowThrottled, func(time.Time) bool { return sel.has("job", "brainwire") }, func(time.Time) string { return "throttled" })
		})},
	{title: "Telemetry health", ref: 2, honours: []string{"job"}, by: []string{"brainwire_telemetry_exporter", "brainwire_telemetry_drop_reason"}, kind: perMinute, want: none},
	{title: evalAccuracy, honours: []string{"job", "version", "eval_run"}, by: []string{"gen_ai_agent_version", "brainwire_eval_run_id"}, kind: ratio,
		want: exact(evalAccuracyTruth)},
}

// exact is a panel's truth that is known exactly under every selection.
func exact(rows func(tr *truth, sel selection) map[string]float64) func(*truth, selection) (map[string]float64, bool) {
	return func(tr *truth, sel selection) (map[string]float64, bool) { return rows(tr, sel), true }
}

// none is the truth of a panel that must show nothing: the workload loses
// no telemetry and leaves no stream open.
func none(*truth, selection) (map[string]float64, bool) { return map[string]float64{}, true }

// tally counts the events of xs that keep takes (all when nil), a row per
// key.
func tally[T any](xs []T, keep func(T) bool, key func(T) string) map[string]float64 {
	rows := map[string]float64{}
	for _, x := range xs {
		if keep == nil || keep(x) {
			rows[key(x)]++
		}
	}
	return rows
}

// cumulative counts the runs keep takes in each histogram bucket at or
// above their confidence, as a classic histogram's le series do.
func cumulative(runs []run, bounds []float64, keep func(run) bool, key func(r run, le string) string) map[string]float64 {
	rows := map[string]float64{}
	for _, r := range runs {
		for _, b := range bounds {
			if keep(r) && r.confidence <= b {
				rows[key(r, leKey(b))]++
			}
		}
	}
	return rows
}

func chunksOf(r run) (float64, bool) { return float64(r.chunks), false }

// traceTruth is what a trace panel must list under a selection: its rows
// as multiset keys.
type traceTruth struct {
	title   string
	honours []string
	row     func(s *telemetrytest.Span) string
	want    func(tr *truth, sel selection) []string
}

var tracePanels = []traceTruth{
	{title: "Agent runs", honours: allVars, row: func(s *telemetrytest.Span) string { return str(telemetrytest.Attr(s.Attributes, "run_id")) },
		want: func(tr *truth, sel selection) []string {
			var out []string
			for _, r := range runsOf(tr, sel, "kind", "outcome", "bucket") {
				out = append(out, r.runID)
			}
			return out
		}},
	{title: "Evaluation runs (brainwire eval)", honours: allVars, row: func(s *telemetrytest.Span) string { return str(telemetrytest.Attr(s.Attributes, "run_id")) },
		want: func(tr *truth, sel selection) []string {
			var out []string
			for _, r := range runsOf(tr, sel, "kind", "outcome", "bucket") {
				if r.evalRunID != "" {
					out = append(out, r.runID)
				}
			}
			return out
		}},
	{title: "Corrections (evaluations of runs)", honours: []string{"job", "version", "outcome", "bucket"},
		row: func(s *telemetrytest.Span) string {
			a := func(k string) string { return fmt.Sprint(telemetrytest.Attr(s.Attributes, k)) }
			return key(a("gen_ai.evaluation.name"), a("gen_ai.agent.version"), a("brainwire.correction.agent_outcome"),
				a("brainwire.correction.human_bucket"))
		},
		want: func(tr *truth, sel selection) []string {
			var out []string
			for _, c := range tr.corrections {
				if sel.ran(c.job, c.version) && sel.has("outcome", c.agentOutcome) && sel.has("bucket", c.human) {
					out = append(out, key("human_bucket", c.version, c.agentOutcome, c.human))
				}
			}
			for _, f := range tr.followUps {
				// A follow-up that filed nothing has no bucket: only All
				// matches its empty one.
				if sel.ran(f.job, f.version) && sel.has("outcome", f.agentOutcome) && sel.hasBucket(f.bucket) {
					out = append(out, key("follow_up_resolution", f.version, f.agentOutcome, f.bucket))
				}
			}
			return out
		}},
}

// TestTuningTruth runs every panel's query, with every selection of its
// variables, interpolated as Grafana does, against the real Prometheus
// (metrics) or the spans received (trace panels, evaluated as Tempo
// would), after the scripted workload: two serve replicas, one of them
// restarted with new instructions, and two evaluations. What each panel
// shows must equal what happened, over the whole workload and over the
// part after the restart, whose range begins long after the other
// replica started and before series it makes only then.
func TestTuningTruth(t *testing.T) {
	p := shared.prom
	if p == nil {
		t.Skip("no prometheus binary (PROMETHEUS_BIN): see .ci/run for how CI builds Prometheus " + prometheusVersion)
	}
	tr := shared.truth
	vars := dashboardVariables(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	// The version variable's options, as Grafana reads them per service.
	options := map[string][]string{"job": {"brainwire", "brainwire-eval", allValue}}
	for _, v := range []string{"bucket", "outcome", "kind"} {
		for _, o := range vars[v].Options {
			if o.Value != allValue {
				options[v] = append(options[v], o.Value)
			}
		}
	}
	for _, job := range options["job"] {
		got, err := p.labelValues(ctx, "gen_ai_agent_version", interpolate(`brainwire_captures_total{job=~"$job"}`, vars, selection{"job": {job}}, nil))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{tr.v1, tr.v2}; !slices.Equal(got, sorted(want)) {
			t.Errorf("version options for %s: %v, want %v", job, got, want)
		}
	}
	options["version"] = sorted([]string{tr.v1, tr.v2})
	// Both shadowed replicas run the one candidate: the evaluations have
	// no shadow.
	for _, job := range options["job"] {
		got, err := p.labelValues(ctx, "brainwire_shadow_version", interpolate(`brainwire_shadow_trials_total{job=~"$job"}`, vars, selection{"job": {job}}, nil))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{tr.candidate}
		if job == "brainwire-eval" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("candidate options for %s: %v, want %v", job, got, want)
		}
	}
	options["candidate"] = []string{tr.candidate}
	agreed, right := 0, map[string]int{}
	for _, s := range tr.shadowTrials {
		if s.agree() {
			agreed++
		}
	}
	for _, s := range tr.shadowScores {
		if s.correct {
			right[s.arm]++
		}
	}
	t.Logf("shadow truth: %d trials, %d agreed; %d arms scored, right: production %d, candidate %d; %d dropped (throttled)",
		len(tr.shadowTrials), agreed, len(tr.shadowScores), right["production"], right["candidate"], len(tr.shadowThrottled))
	checkEvalRunOptions(t, ctx, p, tr, vars, options["job"])
	options["eval_run"] = sorted(tr.evalRuns)
	logEvalAccuracy(t, ctx, p, tr, vars)

	at := time.Now()
	for _, w := range []struct {
		name string
		from time.Time
	}{{"the whole workload", tr.start.Add(-5 * time.Second)}, {"since the restart", tr.restart}} {
		t.Run(w.name, func(t *testing.T) {
			// Grafana's range is whole seconds; it starts at or just
			// after from.
			seconds := math.Floor(at.Sub(w.from).Seconds())
			from := at.Add(-time.Duration(seconds) * time.Second)
			part := tr.since(from)
			checkPanels(t, ctx, p, part, vars, options, at, seconds)
			checkTracePanels(t, part, vars, options, from, seconds)
		})
	}
}

// checkPanels checks every metrics panel under every selection against
// part of the truth, the range being the last seconds before at.
func checkPanels(t *testing.T, ctx context.Context, p *prometheus, part *truth, vars map[string]variable,
	options map[string][]string, at time.Time, seconds float64) {
	builtins := rangeBuiltins(time.Duration(seconds) * time.Second)
	queries := panelQueries(t)
	type job struct {
		pt   panelTruth
		sel  selection
		expr string
	}
	var jobs []job
	for _, pt := range panels {
		q, ok := queries[pt.title]
		if !ok || pt.ref >= len(q) {
			t.Fatalf("no query %d in panel %q", pt.ref, pt.title)
		}
		if !honoured(t, pt.title, q[pt.ref], pt.honours, vars) {
			continue
		}
		for _, sel := range selections(pt.honours, options) {
			jobs = append(jobs, job{pt, sel, interpolate(q[pt.ref], vars, sel, builtins)})
		}
	}
	var (
		mu       sync.Mutex
		failures = map[string]int{}
		skipped  = map[string]int{}
	)
	work := make(chan job)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for j := range work {
				want, ok := j.pt.want(part, j.sel)
				rs, err := p.queryAt(ctx, j.expr, at)
				mu.Lock()
				switch {
				case err != nil:
					t.Errorf("%s [%s]: %v\n%s", j.pt.title, j.sel, err, j.expr)
				case !ok:
					skipped[j.pt.title]++
				default:
					got := rowsOf(rs, j.pt.by, j.pt.kind, seconds)
					if d := diffRows(got, want, j.pt.kind); d != "" {
						if failures[j.pt.title]++; failures[j.pt.title] <= 3 {
							t.Errorf("%s [%s]: %s\n%s", j.pt.title, j.sel, d, j.expr)
						}
					}
				}
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	for title, n := range failures {
		t.Errorf("%s: wrong under %d selections", title, n)
	}
	for title, n := range skipped {
		t.Logf("%s: %d selections not checked (a time to outcome within 1 ms of a bucket bound, or a rank on a step between buckets)", title, n)
	}
	t.Logf("%d panel queries checked against the truth", len(jobs))
}

// checkTracePanels checks the trace panels under every selection against
// part of the truth, on the spans received that began in the range (the
// dashboard's time range selects traces by their time).
func checkTracePanels(t *testing.T, part *truth, vars map[string]variable, options map[string][]string, from time.Time, seconds float64) {
	queries := panelQueries(t)
	builtins := rangeBuiltins(time.Duration(seconds) * time.Second)
	var spans []*telemetrytest.Span
	for _, s := range shared.traces.Spans() {
		if !time.Unix(0, int64(s.StartTimeUnixNano)).Before(from) {
			spans = append(spans, s)
		}
	}
	for _, tp := range tracePanels {
		q := queries[tp.title][0]
		if !honoured(t, tp.title, q, tp.honours, vars) {
			continue
		}
		for _, sel := range selections(tp.honours, options) {
			f, err := parseSpanFilter(interpolate(q, vars, sel, builtins))
			if err != nil {
				t.Fatalf("%s: %v", tp.title, err)
			}
			var got []string
			for _, s := range spans {
				if f.matches(s) {
					got = append(got, tp.row(s))
				}
			}
			want := tp.want(part, sel)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s [%s]: %d rows %v, want %d %v", tp.title, sel, len(got), got, len(want), want)
			}
		}
	}
}

// honoured checks that a query filters by exactly the variables its panel
// honours, and that the panel's description names the others, which do
// not apply to what it shows.
func honoured(t *testing.T, title, q string, honours []string, vars map[string]variable) bool {
	t.Helper()
	if used := usedVariables(q, vars); !slices.Equal(used, sorted(honours)) {
		t.Errorf("%s filters by %v, want %v", title, used, sorted(honours))
		return false
	}
	desc := panelDescriptions(t)[title]
	for _, v := range allVars {
		if !slices.Contains(honours, v) && v != "job" && !strings.Contains(desc, v) {
			t.Errorf("%s does not filter by %s, and its description does not say so: %q", title, v, desc)
		}
	}
	return true
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// rowsOf turns a query's answer into rows keyed as the truth keys them,
// per-minute rates back into counts, leaving out zeros and NaN (an empty
// bar and no bar read the same).
func rowsOf(rs []sample, by []string, kind valueKind, seconds float64) map[string]float64 {
	rows := map[string]float64{}
	for _, r := range rs {
		v := r.Value
		if kind == perMinute {
			v *= seconds / 60
		}
		if v == 0 || math.IsNaN(v) {
			continue
		}
		var k []string
		for _, l := range by {
			lv := r.Metric[l]
			if l == "le" {
				if f, err := strconv.ParseFloat(lv, 64); err == nil {
					lv = leKey(f)
				}
			}
			k = append(k, lv)
		}
		rows[key(k...)] += v
	}
	return rows
}

// diffRows says how got differs from want: counts must be equal, other
// values equal up to float rounding.
func diffRows(got, want map[string]float64, kind valueKind) string {
	tol := 0.0
	if kind != counts {
		tol = 1e-9
	}
	var d []string
	for k, w := range want {
		if w == 0 || math.IsNaN(w) {
			continue
		}
		g, ok := got[k]
		if !ok || math.Abs(g-w) > tol*math.Max(1, math.Abs(w)) {
			d = append(d, fmt.Sprintf("%q: got %v, want %v", k, g, w))
		}
	}
	for k, g := range got {
		if w, ok := want[k]; !ok || w == 0 {
			d = append(d, fmt.Sprintf("%q: got %v, want none", k, g))
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

// panelQueries are the queries of each panel, as written, by title.
func panelQueries(t *testing.T) map[string][]string {
	out := map[string][]string{}
	for _, q := range dashboardQueries(t) {
		if title, ok := strings.CutPrefix(q.where, "panel "); ok {
			out[title] = append(out[title], q.expr)
		}
	}
	return out
}

// labelValues answers a label_values(selector, label) variable query as
// Grafana asks Prometheus for it.
func (p *prometheus) labelValues(ctx context.Context, label, selector string) ([]string, error) {
	var body struct {
		Status string
		Data   []string
	}
	if err := p.get(ctx, "/api/v1/label/"+label+"/values?"+url.Values{"match[]": {selector}}.Encode(), &body); err != nil {
		return nil, err
	}
	slices.Sort(body.Data)
	return body.Data, nil
}

// TestExemplarsOpenTheirRuns checks the exemplar dots: every exemplar of
// the confidence and time-to-outcome histograms carries the trace and span
// ids of a run of the workload, and those of the Low-confidence captures
// panel open low-confidence runs only.
func TestExemplarsOpenTheirRuns(t *testing.T) {
	p := shared.prom
	if p == nil {
		t.Skip("no prometheus binary")
	}
	runs := map[string]run{}
	for _, r := range shared.truth.runs {
		runs[r.traceID] = r
	}
	window := time.Since(shared.truth.start) + 5*time.Second
	vars := dashboardVariables(t)
	queries := panelQueries(t)
	sel := selection{"job": {"brainwire"}, "version": {allValue}, "bucket": {allValue}, "outcome": {allValue}, "kind": {allValue}}
	for _, c := range []struct {
		query   string
		outcome string // every exemplar's run has it; "" for any
	}{
		{`brainwire_capture_confidence_bucket`, ""},
		{`brainwire_capture_time_to_outcome_seconds_bucket`, ""},
		{interpolate(queries["Low-confidence captures per minute (click an exemplar to open the run)"][0], vars, sel, rangeBuiltins(window)), "low_confidence"},
	} {
		ex, err := p.exemplars(t.Context(), c.query, window)
		if err != nil || len(ex) == 0 {
			t.Errorf("%s: no exemplars (%v)", c.query, err)
			continue
		}
		for _, l := range ex {
			r, ok := runs[l[exemplarTraceLabel]]
			switch {
			case !ok:
				t.Errorf("%s: exemplar %v opens no run of the workload", c.query, l)
			case l["span_id"] != r.spanID:
				t.Errorf("%s: exemplar %v: span %s, the run's invoke_agent span is %s", c.query, l, l["span_id"], r.spanID)
			case c.outcome != "" && r.outcome != c.outcome:
				t.Errorf("%s: exemplar %v opens a %s run", c.query, l, r.outcome)
			}
		}
	}
}
