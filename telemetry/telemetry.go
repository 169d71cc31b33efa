package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/brainwire/brainwire/telemetry/appinsights"
)

// ScopeName is the instrumentation scope of every span and metric.
const ScopeName = "github.com/brainwire/brainwire/telemetry"

// Agent describes the agent the captures run, for the GenAI attributes.
type Agent struct {
	Name     string // display name: gen_ai.agent.name, and the span name "invoke_agent <Name>"
	ID       string // gen_ai.agent.id (the Foundry assistant id, or the agent's name)
	Version  string // gen_ai.agent.version, when the agent has one (a Foundry agent version, an instructions hash)
	Provider string // gen_ai.provider.name (the brainwire.Provider's Name)
}

// Config wires a Telemetry to its backends. The zero value records nothing.
type Config struct {
	// TracerProvider creates the spans; nil records none. Its span limits
	// must keep every event (SpanLimits), as Start's do.
	TracerProvider trace.TracerProvider
	// MeterProvider creates the instruments; nil records no metrics.
	MeterProvider metric.MeterProvider
	// AppInsights receives one trace item per reasoning chunk and one
	// request item per capture; nil sends nothing there.
	AppInsights *appinsights.Exporter
	Agent       Agent
	// CaptureContent records capture text, reasoning text and tool
	// arguments and results. Off, only ids, indices and counts remain.
	CaptureContent bool
	// MaxReasoningBytes caps the assembled reasoning put on the
	// invoke_agent span when it ends (gen_ai.output.messages); 0 puts
	// none (Settings default to DefaultMaxReasoningBytes). Every chunk
	// stays an event whatever the cap.
	MaxReasoningBytes int
	Logger            *slog.Logger

	// spanPipelines are the span exporters Start built, whose exported
	// and lost spans the metrics count.
	spanPipelines []*spanPipeline
}

// Telemetry records captures as OpenTelemetry spans and metrics and as
// Application Insights items. It is a brainwire.Observer; WrapTools,
// WrapTransport and WrapStore instrument the rest of a capture, and
// Middleware the HTTP requests around it.
// Safe for concurrent use.
type Telemetry struct {
	tp      trace.TracerProvider
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	ai      *appinsights.Exporter
	agent   Agent
	content bool
	maxText int // of the assembled reasoning; 0: none
	log     *slog.Logger
	inst    instruments
	metrics bool // a meter provider collects the instruments

	// versions are the agent versions whose series have been declared,
	// with the evaluation's run id in an evaluation.
	versions sync.Map
	// noVoice is a process that takes no voice captures (DeclareNoVoice).
	noVoice atomic.Bool
	// instructions are the last instructions rendered as
	// gen_ai.system_instructions: every capture of an agent version
	// carries the same kilobytes, so its spans share one string.
	instructions atomic.Pointer[renderedInstructions]

	// tracing is false when spans are never recorded, to skip building
	// their attributes.
	tracing bool
	enabled bool

	mu        sync.Mutex
	shutdowns []func(context.Context) error
	// metricsShutdown flushes the metrics after the rest, so that the
	// last export counts the spans and items the others sent at shutdown.
	metricsShutdown func(context.Context) error
	shut            bool
}

// New returns a Telemetry over the providers in cfg. It owns none of
// them: Shutdown only stops what Start created.
func New(cfg Config) (*Telemetry, error) {
	t := &Telemetry{
		// W3C trace context and baggage, read from the phone's request
		// and written on upstream calls.
		prop:    propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		ai:      cfg.AppInsights,
		agent:   cfg.Agent,
		content: cfg.CaptureContent,
		maxText: max(cfg.MaxReasoningBytes, 0),
		log:     cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
	}
	t.agent.Name = cmp.Or(t.agent.Name, "agent")
	tp := cfg.TracerProvider
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	_, isNoop := tp.(tracenoop.TracerProvider)
	t.tracing = !isNoop
	t.tp, t.tracer = tp, tp.Tracer(ScopeName)
	mp := cfg.MeterProvider
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	_, noMetrics := mp.(metricnoop.MeterProvider)
	t.metrics = !noMetrics
	t.enabled = t.tracing || t.metrics || t.ai != nil
	inst, err := newInstruments(mp.Meter(ScopeName), t.ai, cfg.spanPipelines)
	if err != nil {
		return nil, err
	}
	t.inst = inst
	return t, nil
}

// Enabled reports whether anything is recorded at all; when false the
// wrappers may be left out.
func (t *Telemetry) Enabled() bool { return t.enabled }

// Shutdown flushes and stops the exporters Start created, all at once but
// the metrics, which go last so that they count what the others sent and
// lost, giving up when ctx ends. Captures still running keep working; what they
// record afterwards is dropped. Later calls do nothing.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	if t.shut {
		t.mu.Unlock()
		return nil
	}
	t.shut = true
	fns, last := t.shutdowns, t.metricsShutdown
	t.mu.Unlock()
	errs := make([]error, len(fns)+1)
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn(ctx) })
	}
	if last != nil {
		// The metrics wait for the others' flush, so that their final
		// export counts it, but for half the time left at most: an
		// exporter stuck on an unreachable backend must not take the
		// metrics' own flush with it.
		flushed := make(chan struct{})
		go func() { wg.Wait(); close(flushed) }()
		var patience <-chan time.Time
		if dl, ok := ctx.Deadline(); ok {
			patience = time.After(time.Until(dl) / 2)
		}
		select {
		case <-flushed:
		case <-patience:
		case <-ctx.Done():
		}
		errs[len(fns)] = last(ctx)
	}
	wg.Wait()
	t.inst.unregister()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}
