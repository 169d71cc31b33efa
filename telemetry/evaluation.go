package telemetry

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/telemetry/appinsights"
)

// DefaultMaxReasoningBytes caps the assembled reasoning on the invoke_agent
// span (Config.MaxReasoningBytes).
const DefaultMaxReasoningBytes = 16 << 10

// EventEvaluationResult is the GenAI conventions' evaluation event: a span
// event of the evaluation span, and an Application Insights custom event.
const EventEvaluationResult = "gen_ai.evaluation.result"

// Evaluation names (gen_ai.evaluation.name) of people's corrections.
const (
	// EvaluationHumanBucket: a person put the capture in a bucket;
	// correct when it is the one the agent filed.
	EvaluationHumanBucket = "human_bucket"
	// EvaluationFollowUp: a person answered the agent's clarifying
	// question; resolved when the follow-up put the capture in a bucket.
	EvaluationFollowUp = "follow_up_resolution"
)

// Score labels (gen_ai.evaluation.score.label).
const (
	ScoreCorrect    = "correct"
	ScoreIncorrect  = "incorrect"
	ScoreResolved   = "resolved"
	ScoreUnresolved = "unresolved"
)

// followUpRounds is the most follow-ups a capture takes (the server's
// MaxFollowUpRounds): their series are declared up front.
const followUpRounds = 3

var _ brainwire.CorrectionObserver = (*Telemetry)(nil)

// evaluation is a correction as an evaluation result.
type evaluation struct {
	name, label, explanation string
	score                    float64
}

func evaluationOf(c brainwire.Correction) evaluation {
	agent := c.Run.Bucket
	if agent == "" {
		agent = "no bucket"
	}
	switch c.Run.Outcome {
	case brainwire.OutcomeMisunderstood:
		agent = "misunderstood (" + agent + "?)"
	case brainwire.OutcomeUnresolved:
		agent = "unresolved"
	}
	if c.Kind == brainwire.CorrectionFollowUp {
		e := evaluation{name: EvaluationFollowUp, label: ScoreUnresolved}
		if c.Resolved() {
			e.label, e.score = ScoreResolved, 1
			e.explanation = fmt.Sprintf("%s -> %s after follow-up round %d", agent, c.Bucket, c.Round)
		} else {
			e.explanation = fmt.Sprintf("%s -> %s after follow-up round %d", agent, c.Outcome, c.Round)
		}
		return e
	}
	e := evaluation{name: EvaluationHumanBucket, label: ScoreIncorrect, explanation: agent + " -> " + c.Bucket}
	if c.Agreed() {
		e.label, e.score = ScoreCorrect, 1
	}
	return e
}

// Correction implements brainwire.CorrectionObserver: a person's verdict on
// an agent run becomes an evaluation of that run. A span in the trace of
// the request that made the correction, linked to the run's invoke_agent
// span, carries a gen_ai.evaluation.result event; Application Insights
// gets the same as a custom event in the run's operation; and the
// corrections (or follow-ups) counter counts it by agent version. A first
// recategorize of a shadowed item also scores both arms of its trial.
func (t *Telemetry) Correction(ctx context.Context, c brainwire.Correction) {
	e := evaluationOf(c)
	t.declareVersion(c.Run.AgentVersion, "")
	var version []attribute.KeyValue
	if c.Run.AgentVersion != "" {
		version = []attribute.KeyValue{semconv.GenAIAgentVersion(c.Run.AgentVersion)}
	}
	switch c.Kind {
	case brainwire.CorrectionFollowUp:
		t.inst.followUps.Add(ctx, 1, metric.WithAttributes(append(followUpSeries(c.Round, c.Outcome), version...)...))
	default:
		t.inst.corrections.Add(ctx, 1, metric.WithAttributes(append(correctionSeries(c.Run.Outcome, c.Run.Bucket, c.Bucket, c.Repeat), version...)...))
		if c.Shadow != nil && !c.Repeat {
			t.shadowScored(ctx, c)
		}
	}
	if t.tracing {
		t.evaluationSpan(ctx, c, e)
	}
	if t.ai != nil {
		t.trackEvaluation(ctx, c, e)
	}
}

// correctionSeries are a recategorize's counter attributes, but for the
// version. repeat tells a person's later thoughts on an item from their
// first verdict, which is what a share of filed items counts.
func correctionSeries(agentOutcome brainwire.Outcome, agentBucket, humanBucket string, repeat bool) []attribute.KeyValue {
	verdict := ScoreIncorrect
	if agentOutcome.Resolved() && agentBucket == humanBucket {
		verdict = ScoreCorrect
	}
	return []attribute.KeyValue{
		AttrAgentOutcome.String(string(agentOutcome)),
		AttrAgentBucket.String(agentBucket),
		AttrHumanBucket.String(humanBucket),
		semconv.GenAIEvaluationScoreLabel(verdict),
		AttrCorrectionRepeat.Bool(repeat),
	}
}

// followUpSeries are a follow-up's counter attributes, but for the version.
func followUpSeries(round int, outcome brainwire.Outcome) []attribute.KeyValue {
	return []attribute.KeyValue{AttrFollowUpRound.Int(round), AttrFollowUpOutcome.String(string(outcome))}
}

func (t *Telemetry) evaluationSpan(ctx context.Context, c brainwire.Correction, e evaluation) {
	result := []attribute.KeyValue{
		semconv.GenAIEvaluationName(e.name),
		semconv.GenAIEvaluationScoreLabel(e.label),
		semconv.GenAIEvaluationScoreValue(e.score),
		semconv.GenAIEvaluationExplanation(e.explanation),
		AttrRunID.String(c.Run.RunID),
	}
	attrs := append(slices.Clip(result),
		semconv.GenAIProviderNameKey.String(t.agent.Provider),
		semconv.GenAIAgentName(t.agent.Name),
		AttrCorrectionKind.String(string(c.Kind)),
		AttrCorrectionRepeat.Bool(c.Repeat),
		AttrInboxItemID.String(c.ItemID),
		AttrAgentOutcome.String(string(c.Run.Outcome)),
		AttrAgentBucket.String(c.Run.Bucket),
		AttrHumanBucket.String(c.Bucket),
	)
	if c.Run.AgentVersion != "" {
		attrs = append(attrs, semconv.GenAIAgentVersion(c.Run.AgentVersion))
	}
	if c.Kind == brainwire.CorrectionFollowUp {
		attrs = append(attrs, AttrFollowUpRound.Int(c.Round), AttrFollowUpOutcome.String(string(c.Outcome)),
			AttrFollowUpRunID.String(c.FollowUpRunID))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...)}
	if sc, ok := spanContextOf(c.Run.Trace()); ok {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	_, span := t.tracer.Start(ctx, "evaluation "+e.name, opts...)
	span.AddEvent(EventEvaluationResult, trace.WithAttributes(result...))
	span.End()
}

// spanContextOf is the span a TraceRef names, as a remote span context a
// link can point to.
func spanContextOf(ref brainwire.TraceRef) (trace.SpanContext, bool) {
	tid, err1 := trace.TraceIDFromHex(ref.TraceID)
	sid, err2 := trace.SpanIDFromHex(ref.SpanID)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return sc, err1 == nil && err2 == nil
}

// trackEvaluation sends the evaluation to Application Insights as a custom
// event in the judged run's operation, under its request, so that it
// shows next to the run; a run that was never traced falls back to the
// correction's own trace.
func (t *Telemetry) trackEvaluation(ctx context.Context, c brainwire.Correction, e evaluation) {
	op := appinsights.Operation{ID: c.Run.TraceID, ParentID: c.Run.SpanID}
	if op.ID == "" {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			op = appinsights.Operation{ID: sc.TraceID().String(), ParentID: sc.SpanID().String()}
		}
	}
	props := []appinsights.Property{
		{Key: string(semconv.GenAIEvaluationNameKey), Value: e.name},
		{Key: string(semconv.GenAIEvaluationScoreLabelKey), Value: e.label},
		{Key: string(semconv.GenAIEvaluationExplanationKey), Value: e.explanation},
		{Key: "correction_kind", Value: string(c.Kind)},
		{Key: "run_id", Value: c.Run.RunID},
		{Key: "inbox_item_id", Value: c.ItemID},
		{Key: "agent_outcome", Value: string(c.Run.Outcome)},
		{Key: "agent_bucket", Value: c.Run.Bucket},
		{Key: "human_bucket", Value: c.Bucket},
	}
	if c.Run.AgentVersion != "" {
		props = append(props, appinsights.Property{Key: "agent_version", Value: c.Run.AgentVersion})
	}
	if c.Kind == brainwire.CorrectionFollowUp {
		props = append(props,
			appinsights.Property{Key: "follow_up_round", Value: strconv.Itoa(c.Round)},
			appinsights.Property{Key: "follow_up_outcome", Value: string(c.Outcome)},
			appinsights.Property{Key: "follow_up_run_id", Value: c.FollowUpRunID})
	}
	at := c.At
	if at.IsZero() {
		at = time.Now()
	}
	t.ai.TrackEvent(appinsights.Event{
		Time:         at,
		Name:         EventEvaluationResult,
		Operation:    op,
		Properties:   props,
		Measurements: []appinsights.Measurement{{Key: string(semconv.GenAIEvaluationScoreValueKey), Value: e.score}},
	})
}

// DeclareNoVoice tells telemetry that this process takes no voice captures
// (it has no blob store or no transcriber): it declares no voice series,
// which it could never count. Call it before the first capture.
func (t *Telemetry) DeclareNoVoice() { t.noVoice.Store(true) }

// declareVersion declares, the first time a version is seen, every series
// its captures, corrections and follow-ups can count, so that dashboards
// show zeros instead of nothing for what has not happened yet. An
// evaluation (evalRunID set) runs text captures only, which no person
// corrects or answers: it declares those captures' series and its case
// runs', right and wrong, and nothing else.
func (t *Telemetry) declareVersion(version, evalRunID string) {
	if !t.metrics {
		return
	}
	// An evaluation's case runs are series of its run id: another
	// evaluation of the version declares its own.
	if _, seen := t.versions.LoadOrStore(version+" "+evalRunID, true); seen {
		return
	}
	var v []attribute.KeyValue
	if version != "" {
		v = []attribute.KeyValue{semconv.GenAIAgentVersion(version)}
	}
	ctx := context.Background()
	declare := func(c metric.Int64Counter, kv ...attribute.KeyValue) {
		c.Add(ctx, 0, metric.WithAttributes(append(kv, v...)...))
	}
	in := &t.inst
	eval := evalRunID != ""
	kinds := []brainwire.CaptureKind{brainwire.KindText, brainwire.KindFollowUp, brainwire.KindVoice}
	switch {
	case eval:
		kinds = kinds[:1]
	case t.noVoice.Load():
		kinds = kinds[:2]
	}
	for _, kind := range kinds {
		k := AttrKind.String(string(kind))
		for _, o := range brainwire.Outcomes {
			out := AttrOutcome.String(string(o))
			switch {
			case o.Filed():
				for _, b := range brainwire.Buckets {
					declare(in.captures, out, k, AttrBucket.String(b))
				}
				if o == brainwire.OutcomeMisunderstood {
					declare(in.captures, out, k)
				}
			default:
				declare(in.captures, out, k)
			}
		}
	}
	if eval {
		for _, correct := range []bool{false, true} {
			in.evalCases.Add(ctx, 0, metric.WithAttributes(evalCaseSeries(version, evalRunID, correct)...))
		}
		return
	}
	for _, o := range []brainwire.Outcome{brainwire.OutcomeClassified, brainwire.OutcomeLowConfidence, brainwire.OutcomeMisunderstood} {
		agentBuckets := brainwire.Buckets
		if o == brainwire.OutcomeMisunderstood {
			agentBuckets = append([]string{""}, brainwire.Buckets...)
		}
		for _, a := range agentBuckets {
			for _, h := range brainwire.Buckets {
				declare(in.corrections, correctionSeries(o, a, h, false)...)
			}
		}
	}
	for round := 1; round <= followUpRounds; round++ {
		for _, o := range brainwire.Outcomes {
			declare(in.followUps, followUpSeries(round, o)...)
		}
	}
}
