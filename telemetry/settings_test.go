package telemetry_test

import (
	"testing"

	"github.com/brainwire/brainwire/telemetry"
)

func settings(t *testing.T, env map[string]string) (telemetry.Settings, error) {
	t.Helper()
	return telemetry.SettingsFromEnv(func(k string) string { return env[k] })
}

func TestSettingsFromEnv(t *testing.T) {
	s, err := settings(t, nil)
	if err != nil || s.Enabled() || !s.CaptureContent || s.ServiceName != "brainwire" {
		t.Fatalf("nothing configured: %+v, %v; want everything off, content on", s, err)
	}

	s, err = settings(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://collector:4317",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://metrics.example:4317",
		"OTEL_SERVICE_NAME":                   "bw",
		"BRAINWIRE_CAPTURE_CONTENT":           "false",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Traces == nil || s.Traces.OTLP != "http://collector:4317" || s.Traces.Console {
		t.Errorf("traces %+v", s.Traces)
	}
	if s.Metrics == nil || s.Metrics.OTLP != "https://metrics.example:4317" {
		t.Errorf("metrics %+v", s.Metrics)
	}
	if s.ServiceName != "bw" || s.CaptureContent {
		t.Errorf("settings %+v", s)
	}

	s, err = settings(t, map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"})
	if err != nil || s.Traces == nil || s.Traces.OTLP != "" || !s.Traces.Console {
		t.Errorf("console traces: %+v, %v", s.Traces, err)
	}
	if s.Metrics == nil || s.Metrics.OTLP != "http://collector:4317" {
		t.Errorf("metrics: %+v", s.Metrics)
	}

	s, err = settings(t, map[string]string{"BRAINWIRE_TELEMETRY_CONSOLE": "1"})
	if err != nil || s.Traces == nil || !s.Traces.Console || s.Metrics == nil || !s.Metrics.Console {
		t.Errorf("BRAINWIRE_TELEMETRY_CONSOLE: %+v %+v, %v", s.Traces, s.Metrics, err)
	}

	s, err = settings(t, map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317",
		"APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=k"})
	if err != nil || s.Traces != nil || s.Metrics != nil || s.AppInsights == nil || !s.Enabled() {
		t.Errorf("OTEL_SDK_DISABLED keeps only Application Insights: %+v, %v", s, err)
	}

	s, err = settings(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_METRICS_EXPORTER": "none"})
	if err != nil || s.Traces == nil || s.Metrics != nil {
		t.Errorf("OTEL_METRICS_EXPORTER=none: %+v, %v", s, err)
	}

	for name, env := range map[string]map[string]string{
		"protocol":        {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
		"exporter":        {"OTEL_TRACES_EXPORTER": "zipkin"},
		"content":         {"BRAINWIRE_CAPTURE_CONTENT": "maybe"},
		"disabled":        {"OTEL_SDK_DISABLED": "perhaps"},
		"connection":      {"APPLICATIONINSIGHTS_CONNECTION_STRING": "IngestionEndpoint=https://x/"},
		"endpoint scheme": {"OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://c:4317"},
		"host:port":       {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"},
		"reasoning cap":   {"BRAINWIRE_REASONING_MAX_BYTES": "16k"},
		"negative cap":    {"BRAINWIRE_REASONING_MAX_BYTES": "-1"},
	} {
		if _, err := settings(t, env); err == nil {
			t.Errorf("%s: %v accepted", name, env)
		}
	}
}

func TestSettingsOfTheTuningSignals(t *testing.T) {
	s, err := settings(t, map[string]string{})
	if err != nil || s.MaxReasoningBytes != telemetry.DefaultMaxReasoningBytes {
		t.Errorf("defaults: %+v, %v", s, err)
	}
	s, err = settings(t, map[string]string{"BRAINWIRE_REASONING_MAX_BYTES": "4096"})
	if err != nil || s.MaxReasoningBytes != 4096 {
		t.Errorf("set: %+v, %v", s, err)
	}
	s, err = settings(t, map[string]string{"BRAINWIRE_REASONING_MAX_BYTES": "0"})
	if err != nil || s.MaxReasoningBytes != 0 {
		t.Errorf("off: %+v, %v", s, err)
	}
}
