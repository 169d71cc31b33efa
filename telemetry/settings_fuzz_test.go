package telemetry_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/telemetry"
)

// FuzzSettingsFromEnv reads any environment (lines of KEY=VALUE): the
// result is an error or settings that hold what the exporters rely on:
// durations and sizes not negative, every OTLP endpoint an http(s) URL
// with a host, a service name.
func FuzzSettingsFromEnv(f *testing.F) {
	for _, env := range []string{
		"",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317\nOTEL_EXPORTER_OTLP_METRICS_ENDPOINT=https://metrics.example:4317",
		"OTEL_TRACES_EXPORTER=console,otlp\nOTEL_METRICS_EXPORTER=none\nOTEL_SERVICE_NAME=bw",
		"OTEL_TRACES_EXPORTER=zipkin", "OTEL_TRACES_EXPORTER= , ,OTLP", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_SDK_DISABLED=TRUE\nOTEL_EXPORTER_OTLP_ENDPOINT=collector:4317", "OTEL_EXPORTER_OTLP_ENDPOINT=http://",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=unix:///tmp/s", "OTEL_METRICS_EXPORTER=console",
		"OTEL_TRACES_SAMPLER=traceidratio\nOTEL_TRACES_SAMPLER_ARG=0.1", "OTEL_TRACES_SAMPLER=bogus",
		"BRAINWIRE_CAPTURE_CONTENT=off\nBRAINWIRE_REASONING_MAX_BYTES=0",
		"BRAINWIRE_REASONING_MAX_BYTES=-1", "BRAINWIRE_REASONING_MAX_BYTES=99999999999999999999",
		"APPLICATIONINSIGHTS_CONNECTION_STRING=InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=https://x.in.applicationinsights.azure.com/",
		"APPLICATIONINSIGHTS_CONNECTION_STRING=;;=",
	} {
		f.Add(env)
	}
	f.Fuzz(func(t *testing.T, env string) {
		vars := map[string]string{}
		for line := range strings.SplitSeq(env, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				vars[k] = v
			}
		}
		s, err := telemetry.SettingsFromEnv(func(k string) string { return vars[k] })
		if err != nil {
			return
		}
		if s.MaxReasoningBytes < 0 || s.ServiceName == "" {
			t.Fatalf("settings %+v from %q", s, env)
		}
		for _, e := range []*telemetry.Exporters{s.Traces, s.Metrics} {
			if e == nil || e.OTLP == "" {
				continue
			}
			if u, err := url.Parse(e.OTLP); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("OTLP endpoint %q from %q", e.OTLP, env)
			}
		}
	})
}
