package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/wiring"
)

// telemetryShutdownTimeout bounds the final flush of traces, metrics and
// Application Insights items when serve stops.
const telemetryShutdownTimeout = 10 * time.Second

// telemetrySetup is serve's telemetry: off and free when nothing is
// configured.
type telemetrySetup struct {
	tel *telemetry.Telemetry
	// logReasoning logs every reasoning chunk (logReasoningFromEnv).
	logReasoning bool
	log          *slog.Logger
}

// setupTelemetry configures telemetry from the environment (see
// telemetry.SettingsFromEnv and the README): OpenTelemetry traces and
// metrics over OTLP/gRPC or to the console (stdout), Application
// Insights, the content switch. With nothing configured everything is off
// and costs nothing. resource describes the process beyond its service
// name and a random instance id (an evaluation names itself).
func setupTelemetry(ctx context.Context, cfg config, getenv func(string) string, stdout io.Writer, log *slog.Logger, resource ...attribute.KeyValue) (*telemetrySetup, error) {
	// The SDK tells what it cannot make of an OTEL_* variable it reads
	// (a header without "=", an interval that is not a number) in its own
	// log, and failed exports through its global error handler: both go
	// to the command's log, in its format, the errors rate-limited.
	otel.SetLogger(logr.FromSlogHandler(log.With("component", "opentelemetry").Handler()))
	otel.SetErrorHandler(&telemetry.ErrorHandler{Logger: log})
	settings, err := telemetry.SettingsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	logReasoning, err := logReasoningFromEnv(getenv, settings)
	if err != nil {
		return nil, err
	}
	tel, err := telemetry.Start(ctx, settings, telemetry.Options{
		Agent:    cfg.Agent.telemetry(),
		Resource: resource,
		Logger:   log,
		Console:  stdout,
	})
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	logTelemetry(settings, logReasoning, log)
	return &telemetrySetup{tel: tel, logReasoning: logReasoning, log: log}, nil
}

// evalResource names an evaluation's process by its run id: every signal
// carries it (brainwire.eval.run_id), and it is the process's instance, so
// that each evaluation's metrics are series of their own (the instance
// label in Prometheus). OTEL_RESOURCE_ATTRIBUTES still wins.
func evalResource(runID string) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.ServiceInstanceID(runID), telemetry.AttrEvalRunID.String(runID)}
}

// logReasoningFromEnv reads BRAINWIRE_LOG_REASONING: whether every
// reasoning chunk is also a log line. auto (the default) logs them when
// neither traces nor Application Insights receive them, so that the
// reasoning is always somewhere without being paid for twice; true and
// false say so. BRAINWIRE_CAPTURE_CONTENT=false turns it off in any case.
func logReasoningFromEnv(getenv func(string) string, s telemetry.Settings) (bool, error) {
	auto := s.Traces == nil && s.AppInsights == nil
	on, err := envParse(getenv, "BRAINWIRE_LOG_REASONING", auto, "auto, true or false", func(v string) (bool, bool) {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "auto":
			return auto, true
		case "true", "1", "yes", "on":
			return true, true
		case "false", "0", "no", "off":
			return false, true
		}
		return false, false
	})
	return on && s.CaptureContent, err
}

// agentName is the Classifier's display name, as the server records it.
const agentName = "Classifier"

func logTelemetry(s telemetry.Settings, logReasoning bool, log *slog.Logger) {
	where := func(e *telemetry.Exporters) string {
		switch {
		case e == nil:
			return "off"
		case e.OTLP != "" && e.Console:
			return e.OTLP + " and console"
		case e.OTLP != "":
			return e.OTLP
		}
		return "console"
	}
	ai := "off"
	if s.AppInsights != nil {
		ai = s.AppInsights.IngestionEndpoint
	}
	log.Info("telemetry", "traces", where(s.Traces), "metrics", where(s.Metrics), "application_insights", ai,
		"capture_content", s.CaptureContent, "log_reasoning", logReasoning, "service_name", s.ServiceName)
}

// shutdown flushes what telemetry still holds, within
// telemetryShutdownTimeout; failures are logged, never fatal.
func (s *telemetrySetup) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryShutdownTimeout)
	defer cancel()
	if err := s.tel.Shutdown(ctx); err != nil {
		s.log.Warn("telemetry: not everything was flushed", "error", err)
	}
}

// upstream is the transport of the clients wiring.New does not build
// (transcription), retried as policy says and followed by telemetry as
// the agent service's calls are (wiring.Upstream).
func (s *telemetrySetup) upstream(policy retry.Policy, base http.RoundTripper) http.RoundTripper {
	if s == nil {
		return wiring.Upstream(nil, policy, base)
	}
	return wiring.Upstream(s.tel, policy, base)
}
