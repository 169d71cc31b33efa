package telemetry_test

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/appinsights"
)

func TestSettingsFromEnv(t *testing.T) {
	const collector = "http://collector:4317"
	ai, err := appinsights.ParseConnectionString("InstrumentationKey=k")
	if err != nil {
		t.Fatal(err)
	}
	defaults := telemetry.Settings{ServiceName: "brainwire", CaptureContent: true, MaxReasoningBytes: telemetry.DefaultMaxReasoningBytes}
	for _, c := range []struct {
		env  map[string]string
		want func(*telemetry.Settings)
	}{
		{nil, func(*telemetry.Settings) {}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "https://metrics.example:4317",
			"OTEL_SERVICE_NAME": "bw", "BRAINWIRE_CAPTURE_CONTENT": "false"}, func(s *telemetry.Settings) {
			s.Traces, s.Metrics = &telemetry.Exporters{OTLP: collector}, &telemetry.Exporters{OTLP: "https://metrics.example:4317"}
			s.ServiceName, s.CaptureContent = "bw", false
		}},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_EXPORTER_OTLP_ENDPOINT": collector}, func(s *telemetry.Settings) {
			s.Traces, s.Metrics = &telemetry.Exporters{Console: true}, &telemetry.Exporters{OTLP: collector}
		}},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console,otlp", "OTEL_METRICS_EXPORTER": "console", "OTEL_EXPORTER_OTLP_ENDPOINT": collector}, func(s *telemetry.Settings) {
			s.Traces, s.Metrics = &telemetry.Exporters{OTLP: collector, Console: true}, &telemetry.Exporters{Console: true}
		}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector, "OTEL_METRICS_EXPORTER": "none"}, func(s *telemetry.Settings) {
			s.Traces = &telemetry.Exporters{OTLP: collector}
		}},
		// OTEL_SDK_DISABLED keeps only Application Insights.
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": collector,
			"APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=k"}, func(s *telemetry.Settings) { s.AppInsights = &ai }},
		// The SDK reads the sampler itself.
		{map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, func(*telemetry.Settings) {}},
		{map[string]string{"OTEL_TRACES_SAMPLER": " Always_Off "}, func(*telemetry.Settings) {}},
		{map[string]string{"OTEL_TRACES_SAMPLER": "always_on", "OTEL_TRACES_SAMPLER_ARG": "ignored"}, func(*telemetry.Settings) {}},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, func(*telemetry.Settings) {}},
		{map[string]string{"BRAINWIRE_REASONING_MAX_BYTES": "4096"}, func(s *telemetry.Settings) { s.MaxReasoningBytes = 4096 }},
		{map[string]string{"BRAINWIRE_REASONING_MAX_BYTES": "0"}, func(s *telemetry.Settings) { s.MaxReasoningBytes = 0 }},
	} {
		want := defaults
		c.want(&want)
		got, err := telemetry.SettingsFromEnv(func(k string) string { return c.env[k] })
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%v: %+v, %v; want %+v", c.env, got, err, want)
		}
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
		if _, err := telemetry.SettingsFromEnv(func(k string) string { return env[k] }); err == nil {
			t.Errorf("%s: %v accepted", name, env)
		}
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
