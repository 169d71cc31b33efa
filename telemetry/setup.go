package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/brainwire/brainwire/telemetry/appinsights"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is unset.
const DefaultServiceName = "brainwire"

// Settings is the telemetry configuration, usually from the environment
// (SettingsFromEnv). It holds only what brainwire decides itself: which
// signals go where. How the OpenTelemetry SDK exports them (headers,
// compression, timeouts, TLS, sampling, resource attributes, the metric
// interval) it reads from the standard OTEL_* variables on its own.
type Settings struct {
	// ServiceName is service.name (OTEL_SERVICE_NAME, read by the SDK,
	// wins) and Application Insights' cloud role; DefaultServiceName when
	// empty.
	ServiceName string

	// Traces and Metrics say where each signal goes; nil sends it nowhere.
	Traces  *Exporters
	Metrics *Exporters

	// AppInsights, when set, sends reasoning chunks and captures to
	// Application Insights.
	AppInsights *appinsights.ConnectionString

	// CaptureContent records capture text, reasoning text and tool
	// arguments and results (default true).
	CaptureContent bool

	// MaxReasoningBytes caps the assembled reasoning on the invoke_agent
	// span (default DefaultMaxReasoningBytes; 0: none).
	MaxReasoningBytes int
}

// Exporters are the destinations of one signal.
type Exporters struct {
	// OTLP is the OTLP/gRPC endpoint URL (http:// for no TLS); empty
	// means none.
	OTLP string
	// Console writes the signal as JSON lines to Options.Console.
	Console bool
}

// SettingsFromEnv reads which signals are on and where they go, from the
// variables docs/telemetry.md lists, and checks the values the SDK would
// take without a word (a protocol other than grpc, a sampler it does not
// have). Traces and metrics are off unless an endpoint or an exporter is
// configured. The SDK reads the sampler and the rest of OTEL_* itself.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{
		ServiceName:       cmp.Or(strings.TrimSpace(getenv("OTEL_SERVICE_NAME")), DefaultServiceName),
		CaptureContent:    true,
		MaxReasoningBytes: DefaultMaxReasoningBytes,
	}
	var errs []error
	fail := func(err error) { errs = append(errs, err) }

	if v := strings.TrimSpace(getenv("BRAINWIRE_REASONING_MAX_BYTES")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fail(fmt.Errorf("BRAINWIRE_REASONING_MAX_BYTES: %q is not a number of bytes", v))
		}
		s.MaxReasoningBytes = n
	}

	if v := getenv("BRAINWIRE_CAPTURE_CONTENT"); v != "" {
		b, err := parseBool(v)
		if err != nil {
			fail(fmt.Errorf("BRAINWIRE_CAPTURE_CONTENT: %w", err))
		}
		s.CaptureContent = b
	}
	if v := getenv("APPLICATIONINSIGHTS_CONNECTION_STRING"); strings.TrimSpace(v) != "" {
		cs, err := appinsights.ParseConnectionString(v)
		if err != nil {
			fail(fmt.Errorf("APPLICATIONINSIGHTS_CONNECTION_STRING: %w", err))
		} else {
			s.AppInsights = &cs
		}
	}
	disabled, err := parseBool(cmp.Or(getenv("OTEL_SDK_DISABLED"), "false"))
	if err != nil {
		fail(fmt.Errorf("OTEL_SDK_DISABLED: %w", err))
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(k)); p != "" && p != "grpc" {
			fail(fmt.Errorf("%s: %q is not grpc, the only protocol brainwire speaks", k, p))
		}
	}
	if err := checkSampler(getenv); err != nil {
		fail(err)
	}
	if !disabled {
		if s.Traces, err = signalFromEnv(getenv, "TRACES"); err != nil {
			fail(err)
		}
		if s.Metrics, err = signalFromEnv(getenv, "METRICS"); err != nil {
			fail(err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, fmt.Errorf("telemetry settings: %w", err)
	}
	return s, nil
}

// signalFromEnv reads one signal's exporters; nil when it goes nowhere.
func signalFromEnv(getenv func(string) string, signal string) (*Exporters, error) {
	endpoint := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"))
	if endpoint == "" {
		endpoint = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	var kinds []string
	if v := getenv("OTEL_" + signal + "_EXPORTER"); strings.TrimSpace(v) != "" {
		for k := range strings.SplitSeq(v, ",") {
			k = strings.ToLower(strings.TrimSpace(k))
			switch k {
			case "otlp", "console", "none":
				kinds = append(kinds, k)
			case "":
			default:
				return nil, fmt.Errorf("OTEL_%s_EXPORTER: %q is not otlp, console or none", signal, k)
			}
		}
	} else if endpoint != "" {
		kinds = []string{"otlp"}
	}
	if slices.Contains(kinds, "none") {
		return nil, nil
	}
	e := &Exporters{Console: slices.Contains(kinds, "console")}
	if slices.Contains(kinds, "otlp") {
		if endpoint == "" {
			endpoint = "http://localhost:4317"
		}
		if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("OTLP %s endpoint %q: want http(s)://host:port", strings.ToLower(signal), endpoint)
		}
		e.OTLP = endpoint
	}
	if e.OTLP == "" && !e.Console {
		return nil, nil
	}
	return e, nil
}

// checkSampler checks OTEL_TRACES_SAMPLER and its argument, which the
// SDK applies: it would report a sampler it does not have, or a ratio
// out of range, only through its error handler, and sample everything.
func checkSampler(getenv func(string) string) error {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	switch name {
	case "", "always_on", "always_off", "parentbased_always_on", "parentbased_always_off":
		return nil
	case "traceidratio", "parentbased_traceidratio":
		arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
		if arg == "" {
			return nil
		}
		if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
			return fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: %q is not a ratio between 0 and 1", arg)
		}
		return nil
	}
	return fmt.Errorf("OTEL_TRACES_SAMPLER: %q is not always_on, always_off, traceidratio, "+
		"parentbased_always_on, parentbased_always_off or parentbased_traceidratio", name)
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "t", "true", "yes", "y", "on":
		return true, nil
	case "0", "f", "false", "no", "n", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (true or false)", v)
}

// Options are what Start needs besides the settings.
type Options struct {
	Agent Agent
	// Resource holds more attributes of the process's resource, such as
	// an evaluation's service.instance.id and brainwire.eval.run_id;
	// OTEL_RESOURCE_ATTRIBUTES wins over them. Without a
	// service.instance.id, every process gets a random one.
	Resource []attribute.KeyValue
	Logger   *slog.Logger
	// Console receives the console exporters' output; os.Stdout when nil.
	Console io.Writer
}

// Start builds the exporters and providers s asks for and returns a
// Telemetry over them. Nothing is dialled synchronously: an unreachable
// endpoint shows up as export errors, never as a slow start or capture.
// Shutdown flushes them.
func Start(ctx context.Context, s Settings, o Options) (_ *Telemetry, err error) {
	log := cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	console := cmp.Or[io.Writer](o.Console, os.Stdout)
	cfg := Config{Agent: o.Agent, CaptureContent: s.CaptureContent, Logger: log, MaxReasoningBytes: s.MaxReasoningBytes}
	// What is built is stopped as Telemetry.Shutdown stops it, should a
	// later part fail.
	owned := &Telemetry{}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			_ = owned.Shutdown(sctx)
		}
	}()
	if s.Traces != nil || s.Metrics != nil {
		res, err := newResource(ctx, s.ServiceName, o.Resource)
		if err != nil {
			return nil, err
		}
		if s.Traces != nil {
			tp, pipelines, err := newTracerProvider(ctx, s, res, console, defaultSpanTuning, log)
			if err != nil {
				return nil, err
			}
			owned.shutdowns = append(owned.shutdowns, tp.Shutdown)
			cfg.TracerProvider, cfg.spanPipelines = tp, pipelines
		}
		if s.Metrics != nil {
			mp, err := newMeterProvider(ctx, s, res, console)
			if err != nil {
				return nil, err
			}
			owned.metricsShutdown = mp.Shutdown
			cfg.MeterProvider = mp
		}
	}
	if s.AppInsights != nil {
		host, _ := os.Hostname()
		ai, err := appinsights.New(appinsights.Config{
			ConnectionString: *s.AppInsights,
			Logger:           log,
			Tags: map[string]string{
				"ai.cloud.role":          cmp.Or(s.ServiceName, DefaultServiceName),
				"ai.cloud.roleInstance":  host,
				"ai.internal.sdkVersion": "go:brainwire",
			},
		})
		if err != nil {
			return nil, fmt.Errorf("telemetry: Application Insights: %w", err)
		}
		owned.shutdowns = append(owned.shutdowns, ai.Shutdown)
		cfg.AppInsights = ai
	}
	t, err := New(cfg)
	if err != nil {
		return nil, err
	}
	t.shutdowns, t.metricsShutdown = owned.shutdowns, owned.metricsShutdown
	return t, nil
}

// newResource describes the process: service.name defaults to brainwire,
// and OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, read by the SDK,
// win over it.
//
// Every process is an instance of its own (service.instance.id, a random
// UUID unless given): replicas, a replica after its restart and each
// evaluation then export series of their own, which a metrics backend
// keeps apart (the collector's Prometheus exporter makes it the instance
// label) instead of letting the last export overwrite the others'.
func newResource(ctx context.Context, service string, extra []attribute.KeyValue) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{
		semconv.ServiceName(cmp.Or(service, DefaultServiceName)),
		semconv.ServiceInstanceID(uuid.NewString()),
	}
	// Later attributes win: the caller's instance id over the random one.
	attrs = append(attrs, extra...)
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
		resource.WithProcessRuntimeName(),
		resource.WithProcessRuntimeVersion(),
		resource.WithAttributes(attrs...),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	// The environment's attributes, read by the SDK, win over all of
	// them; one it cannot read (a pair without "=") is an error here
	// rather than an attribute lost in silence.
	env, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return resource.Merge(res, env)
}

// SpanLimits are the limits of the tracer provider Start builds: the
// defaults (or OTEL_SPAN_* variables), except that a span keeps every
// event. A capture's reasoning chunks are all events of its invoke_agent
// span, and the SDK's default of 128 would silently drop the oldest.
func SpanLimits() sdktrace.SpanLimits {
	l := sdktrace.NewSpanLimits()
	l.EventCountLimit = -1
	if l.AttributePerEventCountLimit >= 0 && l.AttributePerEventCountLimit < 8 {
		l.AttributePerEventCountLimit = 8
	}
	return l
}

// newTracerProvider builds the provider and a pipeline per exporter.
func newTracerProvider(ctx context.Context, s Settings, res *resource.Resource, console io.Writer, tuning spanTuning, log *slog.Logger) (*sdktrace.TracerProvider, []*spanPipeline, error) {
	// No sampler option: the SDK reads OTEL_TRACES_SAMPLER (default
	// parentbased_always_on).
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(SpanLimits())}
	var pipelines []*spanPipeline
	if e := s.Traces; e.OTLP != "" {
		// Headers, compression, timeout, certificates and retries: the
		// exporter reads OTEL_EXPORTER_OTLP_[TRACES_]* itself.
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(e.OTLP))
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
		}
		pipelines = append(pipelines, newSpanPipeline(spanExporterOTLP, exp, tuning, log))
	}
	if s.Traces.Console {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(console))
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: console trace exporter: %w", err)
		}
		pipelines = append(pipelines, newSpanPipeline(spanExporterConsole, exp, tuning, log))
	}
	for _, p := range pipelines {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	return sdktrace.NewTracerProvider(opts...), pipelines, nil
}

func newMeterProvider(ctx context.Context, s Settings, res *resource.Resource, console io.Writer) (*sdkmetric.MeterProvider, error) {
	countFromFirstEvent()
	// No interval option: the reader reads OTEL_METRIC_EXPORT_INTERVAL
	// (default 60s) itself.
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if e := s.Metrics; e.OTLP != "" {
		exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(e.OTLP))
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP metric exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if s.Metrics.Console {
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(console))
		if err != nil {
			return nil, fmt.Errorf("telemetry: console metric exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	return sdkmetric.NewMeterProvider(opts...), nil
}

// perSeriesStartEnv is the SDK's switch for per-series start times, the
// only way it offers them (sdk/metric/internal/x).
const perSeriesStartEnv = "OTEL_GO_X_PER_SERIES_START_TIMESTAMPS"

// countFromFirstEvent makes every cumulative series start when it is
// first measured rather than when the process started, unless the
// operator set the SDK's switch. The start time travels as the points'
// StartTimeUnixNano, which the collector's Prometheus exporter exposes as
// the created timestamp, and Prometheus (created-timestamp-zero-ingestion)
// stores a 0 there: increase() and rate() then count a series from its
// first event, for a series born hours into a replica's life as for one
// of a short evaluation, and histograms as counters.
func countFromFirstEvent() {
	if _, set := os.LookupEnv(perSeriesStartEnv); !set {
		os.Setenv(perSeriesStartEnv, "true")
	}
}
