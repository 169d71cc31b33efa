package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/brainwire/brainwire"
)

// Metric names of shadow trials: candidate instructions run beside
// production on the same captures. No production instrument counts a
// shadow run.
const (
	MetricShadowTrials  = "brainwire.shadow.trials"
	MetricShadowDropped = "brainwire.shadow.dropped"
	MetricShadowScored  = "brainwire.shadow.scored"
)

// Attribute keys of shadow trials.
const (
	AttrShadow                 = attribute.Key("brainwire.shadow") // true on a shadow run's invoke_agent span
	AttrShadowVersion          = attribute.Key("brainwire.shadow.version")
	AttrShadowAgree            = attribute.Key("brainwire.shadow.agree")
	AttrShadowCandidateBucket  = attribute.Key("brainwire.shadow.candidate_bucket")
	AttrShadowProductionBucket = attribute.Key("brainwire.shadow.production_bucket")
	AttrShadowDropReason       = attribute.Key("reason")
	AttrShadowArm              = attribute.Key("brainwire.shadow.arm") // ArmProduction, ArmCandidate
	AttrShadowCorrect          = attribute.Key("brainwire.shadow.correct")
)

// The arms of a shadow trial (brainwire.shadow.arm).
const (
	ArmProduction = "production"
	ArmCandidate  = "candidate"
)

var _ brainwire.ShadowObserver = (*Telemetry)(nil)

// StartShadow implements brainwire.ShadowObserver: the shadow run is a
// trace of its own, a root invoke_agent span marked brainwire.shadow and
// linked to the production run's span, with its reasoning chunks as
// events and its upstream and tool calls beneath it as production's are.
// It records no metric and no Application Insights item: only the shadow
// instruments count shadow runs.
func (t *Telemetry) StartShadow(ctx context.Context, c brainwire.Capture, production brainwire.TraceRef) (context.Context, brainwire.CaptureObserver) {
	sc, _ := spanContextOf(production) // invalid, and so unlinked, when untraced
	return t.startCapture(ctx, c, &sc)
}

// ShadowKept implements brainwire.ShadowObserver: it counts the trial in
// brainwire.shadow.trials.
func (t *Telemetry) ShadowKept(ctx context.Context, tr brainwire.ShadowTrial) {
	t.inst.shadowTrials.Add(ctx, 1, metric.WithAttributes(
		trialSeries(tr.Candidate.AgentVersion, tr.Production.AgentVersion, tr.Candidate.FiledIn(), tr.Production.FiledIn())...))
}

// ShadowDropped implements brainwire.ShadowObserver: it counts the dropped
// shadow in brainwire.shadow.dropped by reason.
func (t *Telemetry) ShadowDropped(ctx context.Context, reason string) {
	t.inst.shadowDropped.Add(ctx, 1, metric.WithAttributes(AttrShadowDropReason.String(reason)))
}

// trialSeries are a trial's counter attributes. The arms agree when they
// put the capture in the same bucket, or both left it unresolved.
func trialSeries(candidate, production, candidateBucket, productionBucket string) []attribute.KeyValue {
	kv := []attribute.KeyValue{
		AttrShadowVersion.String(candidate),
		AttrShadowAgree.Bool(candidateBucket == productionBucket),
		AttrShadowCandidateBucket.String(candidateBucket),
		AttrShadowProductionBucket.String(productionBucket),
	}
	if production != "" {
		kv = append(kv, semconv.GenAIAgentVersion(production))
	}
	return kv
}

// shadowScored scores both arms of a shadowed item against the person's
// first bucket for it: an arm is correct when it resolved the capture to
// that bucket.
func (t *Telemetry) shadowScored(ctx context.Context, c brainwire.Correction) {
	for arm, run := range map[string]brainwire.AgentRun{ArmProduction: c.Shadow.Production, ArmCandidate: c.Shadow.Candidate} {
		t.inst.shadowScored.Add(ctx, 1, metric.WithAttributes(
			scoredSeries(c.Shadow.Candidate.AgentVersion, arm, run.FiledIn() == c.Bucket)...))
	}
}

func scoredSeries(candidate, arm string, correct bool) []attribute.KeyValue {
	return []attribute.KeyValue{AttrShadowVersion.String(candidate), AttrShadowArm.String(arm), AttrShadowCorrect.Bool(correct)}
}

// DeclareShadow tells telemetry that this process runs candidate
// instructions of version candidateVersion in shadow: every series the
// shadow instruments can count is declared at zero, so that dashboards
// show zeros instead of nothing. A process without a shadow declares none.
func (t *Telemetry) DeclareShadow(candidateVersion string) {
	if !t.metrics {
		return
	}
	ctx, in := context.Background(), &t.inst
	buckets := append([]string{""}, brainwire.Buckets...)
	for _, cb := range buckets {
		for _, pb := range buckets {
			in.shadowTrials.Add(ctx, 0, metric.WithAttributes(trialSeries(candidateVersion, t.agent.Version, cb, pb)...))
		}
	}
	for _, r := range []string{brainwire.ShadowBusy, brainwire.ShadowThrottled, brainwire.ShadowDraining, brainwire.ShadowTimeout, brainwire.ShadowFailed} {
		in.shadowDropped.Add(ctx, 0, metric.WithAttributes(AttrShadowDropReason.String(r)))
	}
	for _, arm := range []string{ArmProduction, ArmCandidate} {
		for _, correct := range []bool{false, true} {
			in.shadowScored.Add(ctx, 0, metric.WithAttributes(scoredSeries(candidateVersion, arm, correct)...))
		}
	}
}
