package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/brainwire/brainwire/telemetry"
)

// telemetryShutdownTimeout bounds the final flush of traces, metrics and
// Application Insights items when serve stops.
const telemetryShutdownTimeout = 10 * time.Second

// telemetrySetup is serve's telemetry: off and free when nothing is
// configured.
type telemetrySetup struct {
	tel *telemetry.Telemetry
	// content is BRAINWIRE_CAPTURE_CONTENT: with it, reasoning chunks are
	// also logged.
	content bool
	log     *slog.Logger
}

// setupTelemetry configures telemetry from the environment (see
// telemetry.SettingsFromEnv): OpenTelemetry traces and metrics over
// OTLP/gRPC or to the console (stdout), Application Insights, the content
// switch. With nothing configured everything is off and costs nothing.
func setupTelemetry(ctx context.Context, cfg config, getenv func(string) string, stdout io.Writer, log *slog.Logger) (*telemetrySetup, error) {
	settings, err := telemetry.SettingsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	provider, agentID := cfg.agentIdentity()
	tel, err := telemetry.Start(ctx, settings, telemetry.Options{
		Agent:   telemetry.Agent{Name: agentName, ID: agentID, Provider: provider},
		Logger:  log,
		Console: stdout,
	})
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if tel.Enabled() {
		// The SDK reports failed exports through its global handler: to
		// the log, rate-limited, instead of stderr on every attempt.
		otel.SetErrorHandler(&telemetry.ErrorHandler{Logger: log})
	}
	logTelemetry(settings, log)
	return &telemetrySetup{tel: tel, content: settings.CaptureContent, log: log}, nil
}

// agentName is the Classifier's display name, as the server records it.
const agentName = "Classifier"

func logTelemetry(s telemetry.Settings, log *slog.Logger) {
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
		"capture_content", s.CaptureContent, "service_name", s.ServiceName)
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
