package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/telemetry"
)

// telemetryShutdownTimeout bounds the final flush of traces, metrics and
// Application Insights items when serve stops.
const telemetryShutdownTimeout = 10 * time.Second

// telemetrySetup is what serve wires into the server: each field is a
// no-op when telemetry is off.
type telemetrySetup struct {
	// Observer watches captures: telemetry, and the reasoning log unless
	// content capture is off.
	Observer brainwire.Observer
	// WrapTools traces tool calls (server.Config.WrapTools); nil when off.
	WrapTools func(brainwire.ToolSet) brainwire.ToolSet
	// WrapTransport goes under the agent service's authorization and
	// under the recorder, so that recorded requests carry no traceparent.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// WrapStore traces store operations.
	WrapStore func(brainwire.Store) brainwire.Store
	// Middleware is the HTTP server span around the whole API.
	Middleware func(http.Handler) http.Handler
	// CaptureContent is BRAINWIRE_CAPTURE_CONTENT.
	CaptureContent bool

	tel *telemetry.Telemetry
	log *slog.Logger
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
	agentID := cfg.FoundryAgentID
	if cfg.FoundryEndpoint == "" {
		agentID = simulator.DefaultAgentID
	}
	tel, err := telemetry.Start(ctx, settings, telemetry.Options{
		Agent:   telemetry.Agent{Name: agentName, ID: agentID, Provider: foundry.ProviderName},
		Logger:  log,
		Console: stdout,
	})
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	s := &telemetrySetup{
		WrapTransport:  func(rt http.RoundTripper) http.RoundTripper { return rt },
		WrapStore:      func(st brainwire.Store) brainwire.Store { return st },
		Middleware:     func(h http.Handler) http.Handler { return h },
		CaptureContent: settings.CaptureContent,
		tel:            tel,
		log:            log,
	}
	var observers brainwire.Observers
	if settings.CaptureContent {
		observers = append(observers, telemetry.LogObserver{Logger: log})
	}
	if tel.Enabled() {
		// The SDK reports failed exports through its global handler: to
		// the log, rate-limited, instead of stderr on every attempt.
		otel.SetErrorHandler(&telemetry.ErrorHandler{Logger: log})
		observers = append(observers, tel)
		s.WrapTools = tel.WrapTools
		s.WrapTransport = tel.WrapTransport
		s.WrapStore = tel.WrapStore
		s.Middleware = tel.Middleware
	}
	s.Observer = observers
	logTelemetry(settings, log)
	return s, nil
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

// instrument puts telemetry into a server configuration, beside what is
// already there (another observer, tool wrapper): serve and its tests
// wire it the same way.
func (s *telemetrySetup) instrument(c *server.Config) {
	if c.Observer == nil {
		c.Observer = s.Observer
	} else {
		c.Observer = brainwire.Observers{s.Observer, c.Observer}
	}
	if wrap, inner := s.WrapTools, c.WrapTools; wrap != nil {
		c.WrapTools = func(set brainwire.ToolSet) brainwire.ToolSet {
			set = wrap(set)
			if inner != nil {
				set = inner(set)
			}
			return set
		}
	}
	c.Store = s.WrapStore(c.Store)
	c.Middleware = s.Middleware
}
