package telemetry

import (
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

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
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
// (SettingsFromEnv).
type Settings struct {
	ServiceName        string
	ResourceAttributes []attribute.KeyValue

	// Traces and Metrics say where each signal goes; nil sends it nowhere.
	Traces  *Exporters
	Metrics *Exporters

	// Sampler picks the traces recorded; nil means parent-based always-on.
	Sampler sdktrace.Sampler
	// MetricInterval is how often metrics are exported (default 60s).
	MetricInterval time.Duration

	// AppInsights, when set, sends reasoning chunks and captures to
	// Application Insights.
	AppInsights *appinsights.ConnectionString

	// CaptureContent records capture text, reasoning text and tool
	// arguments and results (default true).
	CaptureContent bool
}

// Exporters are the destinations of one signal.
type Exporters struct {
	// OTLP is the OTLP/gRPC endpoint; empty means none.
	OTLP     string
	Insecure bool // no TLS (an http:// endpoint, or OTEL_EXPORTER_OTLP_INSECURE)
	Headers  map[string]string
	Gzip     bool
	Timeout  time.Duration
	// Console writes the signal as JSON lines to Options.Console.
	Console bool
}

// Enabled reports whether any signal is exported.
func (s Settings) Enabled() bool {
	return s.Traces != nil || s.Metrics != nil || s.AppInsights != nil
}

// SettingsFromEnv reads the standard OpenTelemetry variables and
// brainwire's own:
//
//	OTEL_SDK_DISABLED                    true: no OpenTelemetry traces or metrics
//	OTEL_SERVICE_NAME                    service.name (default brainwire)
//	OTEL_RESOURCE_ATTRIBUTES             key=value,... added to the resource
//	OTEL_EXPORTER_OTLP_ENDPOINT          OTLP/gRPC endpoint of both signals
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT   ... of traces (wins over the above)
//	OTEL_EXPORTER_OTLP_METRICS_ENDPOINT  ... of metrics
//	OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]{HEADERS,INSECURE,COMPRESSION,TIMEOUT}
//	OTEL_EXPORTER_OTLP_PROTOCOL          grpc only
//	OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER  otlp, console, none (comma-separated)
//	OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG
//	OTEL_METRIC_EXPORT_INTERVAL          milliseconds
//	BRAINWIRE_TELEMETRY_CONSOLE          true: also print traces and metrics
//	BRAINWIRE_CAPTURE_CONTENT            false: no capture, reasoning or tool content
//	APPLICATIONINSIGHTS_CONNECTION_STRING
//
// Traces and metrics are off unless an endpoint, an exporter or the
// console is configured.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{
		ServiceName:    orDefault(strings.TrimSpace(getenv("OTEL_SERVICE_NAME")), DefaultServiceName),
		CaptureContent: true,
		MetricInterval: 60 * time.Second,
	}
	var errs []error
	fail := func(err error) { errs = append(errs, err) }

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
	attrs, err := parseResourceAttributes(getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		fail(err)
	}
	s.ResourceAttributes = attrs

	disabled, err := parseBool(orDefault(getenv("OTEL_SDK_DISABLED"), "false"))
	if err != nil {
		fail(fmt.Errorf("OTEL_SDK_DISABLED: %w", err))
	}
	console := false
	if v := getenv("BRAINWIRE_TELEMETRY_CONSOLE"); v != "" {
		if console, err = parseBool(v); err != nil {
			fail(fmt.Errorf("BRAINWIRE_TELEMETRY_CONSOLE: %w", err))
		}
	}
	if p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL")); p != "" && p != "grpc" {
		fail(fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: only grpc is supported", p))
	}
	if !disabled {
		if s.Traces, err = signalFromEnv(getenv, "TRACES", console); err != nil {
			fail(err)
		}
		if s.Metrics, err = signalFromEnv(getenv, "METRICS", console); err != nil {
			fail(err)
		}
		if s.Sampler, err = samplerFromEnv(getenv); err != nil {
			fail(err)
		}
		if v := getenv("OTEL_METRIC_EXPORT_INTERVAL"); v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				fail(fmt.Errorf("OTEL_METRIC_EXPORT_INTERVAL: %q is not a positive number of milliseconds", v))
			} else {
				s.MetricInterval = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, fmt.Errorf("telemetry settings: %w", err)
	}
	return s, nil
}

// signalFromEnv reads one signal's exporters; nil when it goes nowhere.
func signalFromEnv(getenv func(string) string, signal string, console bool) (*Exporters, error) {
	env := func(name string) string {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
	}
	endpoint := env("ENDPOINT")
	var kinds []string
	if v := getenv("OTEL_" + signal + "_EXPORTER"); strings.TrimSpace(v) != "" {
		for k := range strings.SplitSeq(v, ",") {
			k = strings.ToLower(strings.TrimSpace(k))
			switch k {
			case "otlp", "console", "none":
				kinds = append(kinds, k)
			case "":
			default:
				return nil, fmt.Errorf("OTEL_%s_EXPORTER: %q is not supported (otlp, console, none)", signal, k)
			}
		}
	} else if endpoint != "" {
		kinds = []string{"otlp"}
	}
	if slices.Contains(kinds, "none") {
		return nil, nil
	}
	e := &Exporters{Console: console || slices.Contains(kinds, "console")}
	if slices.Contains(kinds, "otlp") {
		if endpoint == "" {
			endpoint = "http://localhost:4317"
		}
		insecure := false
		if v := env("INSECURE"); v != "" {
			b, err := parseBool(v)
			if err != nil {
				return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_%s_INSECURE: %w", signal, err)
			}
			insecure = b
		}
		u, err := url.Parse(endpoint)
		switch {
		case err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
			insecure = u.Scheme == "http"
		case !strings.Contains(endpoint, "://"):
			// host:port; TLS unless told otherwise.
			endpoint = "https://" + endpoint
			if insecure {
				endpoint = "http://" + strings.TrimPrefix(endpoint, "https://")
			}
		default:
			return nil, fmt.Errorf("OTLP %s endpoint %q: want http(s)://host:port", strings.ToLower(signal), endpoint)
		}
		e.OTLP, e.Insecure = endpoint, insecure
		if e.Headers, err = parseHeaders(env("HEADERS")); err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_%s_HEADERS: %w", signal, err)
		}
		switch c := env("COMPRESSION"); c {
		case "gzip":
			e.Gzip = true
		case "", "none":
		default:
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_%s_COMPRESSION: %q is not supported (gzip, none)", signal, c)
		}
		if v := env("TIMEOUT"); v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_%s_TIMEOUT: %q is not a positive number of milliseconds", signal, v)
			}
			e.Timeout = time.Duration(ms) * time.Millisecond
		}
	}
	if e.OTLP == "" && !e.Console {
		return nil, nil
	}
	return e, nil
}

func samplerFromEnv(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: %q is not a ratio between 0 and 1", arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		r, err := ratio()
		return sdktrace.TraceIDRatioBased(r), err
	case "parentbased_traceidratio":
		r, err := ratio()
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), err
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER: %q is not supported", name)
}

// parseResourceAttributes reads key1=value1,key2=value2 (values
// percent-encoded, as the specification says).
func parseResourceAttributes(v string) ([]attribute.KeyValue, error) {
	kv, err := parseKeyValues(v)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	out := make([]attribute.KeyValue, 0, len(kv))
	for _, p := range kv {
		out = append(out, attribute.String(p[0], p[1]))
	}
	return out, nil
}

func parseHeaders(v string) (map[string]string, error) {
	kv, err := parseKeyValues(v)
	if err != nil || len(kv) == 0 {
		return nil, err
	}
	h := make(map[string]string, len(kv))
	for _, p := range kv {
		h[p[0]] = p[1]
	}
	return h, nil
}

func parseKeyValues(v string) ([][2]string, error) {
	var out [][2]string
	for part := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", part)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("value of %s: %w", k, err)
		}
		out = append(out, [2]string{k, dec})
	}
	return out, nil
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
	// ServiceVersion is service.version, unless the settings name one.
	ServiceVersion string
	Logger         *slog.Logger
	// Console receives the console exporters' output; os.Stdout when nil.
	Console io.Writer
}

// Tuning of the span pipeline: spans are queued only when they end, so
// the queue holds finished spans, never a capture's chunks; a full queue
// drops spans rather than waiting. Batches are kept small because an
// invoke_agent span of a long run carries every chunk.
const (
	spanQueueSize      = 4096
	spanExportBatch    = 16
	spanBatchTimeout   = 2 * time.Second
	spanExportTimeout  = 10 * time.Second
	aiQueueSize        = appinsights.DefaultQueueSize
	defaultOTLPTimeout = 10 * time.Second
)

// Start builds the exporters and providers s asks for and returns a
// Telemetry over them. Nothing is dialled synchronously: an unreachable
// endpoint shows up as export errors, never as a slow start or capture.
// Shutdown flushes them.
func Start(ctx context.Context, s Settings, o Options) (_ *Telemetry, err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	console := o.Console
	if console == nil {
		console = os.Stdout
	}
	var shutdowns []func(context.Context) error
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			for _, fn := range shutdowns {
				_ = fn(sctx)
			}
		}
	}()

	cfg := Config{Agent: o.Agent, CaptureContent: s.CaptureContent, Logger: log}
	if s.Traces != nil || s.Metrics != nil {
		res, err := s.resource(ctx, o)
		if err != nil {
			return nil, err
		}
		if s.Traces != nil {
			tp, err := newTracerProvider(ctx, s, res, console)
			if err != nil {
				return nil, err
			}
			shutdowns = append(shutdowns, tp.Shutdown)
			cfg.TracerProvider = tp
		}
		if s.Metrics != nil {
			mp, err := newMeterProvider(ctx, s, res, console)
			if err != nil {
				return nil, err
			}
			shutdowns = append(shutdowns, mp.Shutdown)
			cfg.MeterProvider = mp
		}
	}
	if s.AppInsights != nil {
		host, _ := os.Hostname()
		ai, err := appinsights.New(appinsights.Config{
			ConnectionString: *s.AppInsights,
			QueueSize:        aiQueueSize,
			Logger:           log,
			Tags: map[string]string{
				"ai.cloud.role":          s.ServiceName,
				"ai.cloud.roleInstance":  host,
				"ai.internal.sdkVersion": "go:brainwire",
			},
		})
		if err != nil {
			return nil, fmt.Errorf("telemetry: Application Insights: %w", err)
		}
		shutdowns = append(shutdowns, ai.Shutdown)
		cfg.AppInsights = ai
	}
	t, err := New(cfg)
	if err != nil {
		return nil, err
	}
	for _, fn := range shutdowns {
		t.onShutdown(fn)
	}
	return t, nil
}

func (s Settings) resource(ctx context.Context, o Options) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName(s.ServiceName)}
	if v := o.ServiceVersion; v != "" {
		attrs = append(attrs, semconv.ServiceVersion(v))
	}
	// OTEL_RESOURCE_ATTRIBUTES come first so that OTEL_SERVICE_NAME wins,
	// as the specification says.
	attrs = append(slices.Clone(s.ResourceAttributes), attrs...)
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
	return res, nil
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

func newTracerProvider(ctx context.Context, s Settings, res *resource.Resource, console io.Writer) (*sdktrace.TracerProvider, error) {
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(SpanLimits()),
	}
	if s.Sampler != nil {
		opts = append(opts, sdktrace.WithSampler(s.Sampler))
	} else {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	}
	bsp := []sdktrace.BatchSpanProcessorOption{
		sdktrace.WithMaxQueueSize(spanQueueSize),
		sdktrace.WithMaxExportBatchSize(spanExportBatch),
		sdktrace.WithBatchTimeout(spanBatchTimeout),
		sdktrace.WithExportTimeout(spanExportTimeout),
	}
	if e := s.Traces; e.OTLP != "" {
		o := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(e.OTLP), otlptracegrpc.WithTimeout(orDuration(e.Timeout, defaultOTLPTimeout))}
		if e.Insecure {
			o = append(o, otlptracegrpc.WithInsecure())
		}
		if len(e.Headers) > 0 {
			o = append(o, otlptracegrpc.WithHeaders(e.Headers))
		}
		if e.Gzip {
			o = append(o, otlptracegrpc.WithCompressor("gzip"))
		}
		exp, err := otlptracegrpc.New(ctx, o...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp, bsp...))
	}
	if s.Traces.Console {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(console))
		if err != nil {
			return nil, fmt.Errorf("telemetry: console trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp, bsp...))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

func newMeterProvider(ctx context.Context, s Settings, res *resource.Resource, console io.Writer) (*sdkmetric.MeterProvider, error) {
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	interval := orDuration(s.MetricInterval, 60*time.Second)
	if e := s.Metrics; e.OTLP != "" {
		o := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpointURL(e.OTLP), otlpmetricgrpc.WithTimeout(orDuration(e.Timeout, defaultOTLPTimeout))}
		if e.Insecure {
			o = append(o, otlpmetricgrpc.WithInsecure())
		}
		if len(e.Headers) > 0 {
			o = append(o, otlpmetricgrpc.WithHeaders(e.Headers))
		}
		if e.Gzip {
			o = append(o, otlpmetricgrpc.WithCompressor("gzip"))
		}
		exp, err := otlpmetricgrpc.New(ctx, o...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP metric exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval))))
	}
	if s.Metrics.Console {
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(newConsoleMetricExporter(console), sdkmetric.WithInterval(interval))))
	}
	return sdkmetric.NewMeterProvider(opts...), nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
