package replay

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire/telemetry"
)

// AgentName is the agent's display name in an Env, as telemetry shows it.
const AgentName = "Classifier"

// tracing is the telemetry pipeline over an in-memory span recorder, so
// that a replay's summary shows the spans telemetry made of the capture.
type tracing struct {
	tel   *telemetry.Telemetry
	spans *tracetest.SpanRecorder
	tp    *sdktrace.TracerProvider
}

func newTracing(agent telemetry.Agent) (*tracing, error) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(spans),
		sdktrace.WithRawSpanLimits(telemetry.SpanLimits()),
	)
	tel, err := telemetry.New(telemetry.Config{
		TracerProvider: tp,
		Agent:          agent,
		CaptureContent: true,
	})
	if err != nil {
		return nil, fmt.Errorf("replay: telemetry: %w", err)
	}
	return &tracing{tel: tel, spans: spans, tp: tp}, nil
}

func (tr *tracing) shutdown(ctx context.Context) {
	_ = tr.tel.Shutdown(ctx)
	_ = tr.tp.Shutdown(ctx)
}

// invokeAttrs are the attributes of the agent span the summary shows: the
// outcome and what identifies the run and the agent version; durations
// and addresses vary between runs and are left out, and so is content
// (the assembled reasoning is what the reasoning.chunk line counts). A
// replay runs no agent description, so a fixture's summary has no
// version.
var invokeAttrs = []attribute.Key{
	"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.agent.id", "gen_ai.agent.version", "gen_ai.request.model",
	"gen_ai.conversation.id",
	telemetry.AttrKind, telemetry.AttrOutcome, telemetry.AttrBucket, telemetry.AttrConfidence,
	telemetry.AttrChunkCount, "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
	"gen_ai.usage.reasoning.output_tokens", "error.type",
}

// evaluationAttrs are the attributes of an evaluation span (a person's
// correction of a run) the summary shows: the verdict.
var evaluationAttrs = []attribute.Key{
	"gen_ai.evaluation.name", "gen_ai.evaluation.score.label", "gen_ai.evaluation.explanation",
}

// isShadow tells a shadow run's root span (brainwire.shadow).
func isShadow(s sdktrace.ReadOnlySpan) bool {
	for _, kv := range s.Attributes() {
		if kv.Key == telemetry.AttrShadow {
			return kv.Value.AsBool()
		}
	}
	return false
}

// lines renders the ended spans as a tree (children in start order), with
// the agent span's outcome attributes and its reasoning.chunk events. A
// shadow run is a trace of its own, not the capture's: it is left out.
func (tr *tracing) lines() []string {
	ended := tr.spans.Ended()
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range ended {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range ended {
		if p := s.Parent().SpanID(); s.Parent().IsValid() && ids[p] {
			children[p] = append(children[p], s)
		} else if !isShadow(s) {
			roots = append(roots, s)
		}
	}
	order := func(list []sdktrace.ReadOnlySpan) {
		slices.SortStableFunc(list, func(a, b sdktrace.ReadOnlySpan) int {
			if c := a.StartTime().Compare(b.StartTime()); c != 0 {
				return c
			}
			return strings.Compare(a.Name(), b.Name())
		})
	}
	var out []string
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		indent := strings.Repeat("  ", depth)
		line := indent + s.Name() + " [" + s.SpanKind().String() + "]"
		if s.Status().Code == codes.Error {
			line += " status=error"
		}
		out = append(out, line)
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		keys := []attribute.Key{"error.type", "http.request.resend_count"}
		switch {
		case strings.HasPrefix(s.Name(), "invoke_agent "):
			keys = invokeAttrs
		case strings.HasPrefix(s.Name(), "evaluation "):
			keys = evaluationAttrs
		}
		for _, k := range keys {
			if v, ok := attrs[k]; ok {
				out = append(out, indent+"  - "+string(k)+"="+v.Emit())
			}
		}
		if evs := chunkIndices(s.Events()); len(evs) > 0 {
			out = append(out, fmt.Sprintf("%s  - %s events: %d, chunk_index %s", indent, telemetry.EventReasoningChunk, len(evs), ranges(evs)))
		}
		for _, ev := range s.Events() {
			if ev.Name == telemetry.EventRetry {
				// The wait is left out: a backoff's has jitter.
				for _, kv := range ev.Attributes {
					if kv.Key == telemetry.AttrRetryStatus {
						out = append(out, indent+"  - "+telemetry.EventRetry+" event: "+string(kv.Key)+"="+kv.Value.Emit())
					}
				}
			}
		}
		kids := children[s.SpanContext().SpanID()]
		order(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	order(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	return out
}

func chunkIndices(evs []sdktrace.Event) []int {
	var idx []int
	for _, ev := range evs {
		if ev.Name != telemetry.EventReasoningChunk {
			continue
		}
		for _, kv := range ev.Attributes {
			if kv.Key == telemetry.AttrChunkIndex {
				n, _ := strconv.Atoi(kv.Value.Emit())
				idx = append(idx, n)
			}
		}
	}
	return idx
}
