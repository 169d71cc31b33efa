package telemetry_test

import (
	"io"
	"strings"
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

	s, err = settings(t, map[string]string{"OTEL_TRACES_EXPORTER": "console,otlp", "OTEL_METRICS_EXPORTER": "console",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"})
	if err != nil || s.Traces == nil || !s.Traces.Console || s.Traces.OTLP == "" || s.Metrics == nil || !s.Metrics.Console || s.Metrics.OTLP != "" {
		t.Errorf("console: %+v %+v, %v", s.Traces, s.Metrics, err)
	}

	for _, env := range []map[string]string{
		{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
		{"OTEL_TRACES_SAMPLER": " Always_Off "},
		{"OTEL_TRACES_SAMPLER": "always_on", "OTEL_TRACES_SAMPLER_ARG": "ignored"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
	} {
		if _, err := settings(t, env); err != nil {
			t.Errorf("%v: %v", env, err)
		}
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
		"protocol":         {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
		"metrics protocol": {"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"},
		"sampler":          {"OTEL_TRACES_SAMPLER": "bogus"},
		"sampler ratio":    {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"},
		"sampler arg":      {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"},
		"exporter":         {"OTEL_TRACES_EXPORTER": "zipkin"},
		"content":          {"BRAINWIRE_CAPTURE_CONTENT": "maybe"},
		"disabled":         {"OTEL_SDK_DISABLED": "perhaps"},
		"connection":       {"APPLICATIONINSIGHTS_CONNECTION_STRING": "IngestionEndpoint=https://x/"},
		"endpoint scheme":  {"OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://c:4317"},
		"host:port":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"},
		"reasoning cap":    {"BRAINWIRE_REASONING_MAX_BYTES": "16k"},
		"negative cap":     {"BRAINWIRE_REASONING_MAX_BYTES": "-1"},
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

// TestResourceAttributesAreChecked: a pair the SDK cannot read stops
// Start, instead of an attribute lost in silence.
func TestResourceAttributesAreChecked(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "team=second%20brain,oops")
	s := telemetry.Settings{ServiceName: "brainwire", Metrics: &telemetry.Exporters{Console: true}}
	_, err := telemetry.Start(t.Context(), s, telemetry.Options{Console: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "OTEL_RESOURCE_ATTRIBUTES") {
		t.Errorf("Start: %v, want an error naming OTEL_RESOURCE_ATTRIBUTES", err)
	}
}
