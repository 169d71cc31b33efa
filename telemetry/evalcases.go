package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// MetricEvalCases counts an evaluation's case runs. A resource attribute
// (brainwire.eval.run_id on an eval's resource) is no label in
// Prometheus, so the run id is on each point: two evaluations of one
// version stay apart.
const MetricEvalCases = "brainwire.eval.cases"

// AttrEvalCorrect says whether a case run gave the answer its case
// expects, by the rule of eval's report.
const AttrEvalCorrect = attribute.Key("brainwire.eval.correct")

// EvalCaseRun counts one run of an evaluation's case in
// brainwire.eval.cases, by agent version, evaluation run id and whether
// it was right. Only `brainwire eval` calls it, once a run's outcome is
// known.
func (t *Telemetry) EvalCaseRun(ctx context.Context, version, evalRunID string, correct bool) {
	t.inst.evalCases.Add(ctx, 1, metric.WithAttributes(evalCaseSeries(version, evalRunID, correct)...))
}

func evalCaseSeries(version, evalRunID string, correct bool) []attribute.KeyValue {
	kv := []attribute.KeyValue{AttrEvalRunID.String(evalRunID), AttrEvalCorrect.Bool(correct)}
	if version != "" {
		kv = append(kv, semconv.GenAIAgentVersion(version))
	}
	return kv
}
