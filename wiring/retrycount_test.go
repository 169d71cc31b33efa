package wiring_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/brainwire/brainwire/internal/scripttest"
	"github.com/brainwire/brainwire/telemetry"
)

// TestRetriedAttemptsAreCountedApart refuses a capture's first call once
// (the retry hides it from the phone), another capture's first call every
// time (the third refusal reaches the phone), and a third's once asking
// for a wait past the run (the refusal reaches the phone at once):
// brainwire.upstream.errors counts each refusal, retried when the call
// was sent again after it, and the retried ones are the retries
// brainwire.upstream.retries counts.
func TestRetriedAttemptsAreCountedApart(t *testing.T) {
	for _, u := range upstreams() {
		t.Run(u.name, func(t *testing.T) {
			first := u.calls[0]
			refuse := scripttest.Call{Method: first.Method, Path: first.Path, Response: refused(429)}
			refuseLong := scripttest.Call{Method: first.Method, Path: first.Path, Response: refused(429).WithHeader("retry-after-ms", "3600000")}
			for _, c := range []struct {
				name          string
				script        []scripttest.Call
				outcome       string
				retried, seen int64 // refusals sent again, and the one the phone saw
			}{
				{"refused once", append([]scripttest.Call{refuse}, u.calls...), `"type":"CLASSIFIED"`, 1, 0},
				{"refused every time", []scripttest.Call{refuse, refuse, refuse}, `"type":"ERROR"`, 2, 1},
				{"refused for longer than the run", []scripttest.Call{refuseLong}, `"code":"busy","retryAfterSeconds":3600}`, 0, 1},
			} {
				t.Run(c.name, func(t *testing.T) {
					agent, _ := u.serve(t, c.script)
					o := observe(t, agent)
					if got := postStream(t, o.phone, "/api/capture", `{"text":"Call Sarah about the offsite"}`); !strings.Contains(got, c.outcome) {
						t.Fatalf("the phone got:\n%s\nwant %s", got, c.outcome)
					}
					var rm metricdata.ResourceMetrics
					if err := o.metrics.Collect(context.Background(), &rm); err != nil {
						t.Fatal(err)
					}
					errs := sums(rm, telemetry.MetricUpstreamErrors, "error.type", string(telemetry.AttrUpstreamErrRetried))
					want := map[string]int64{}
					if c.retried > 0 {
						want["429 true"] = c.retried
					}
					if c.seen > 0 {
						want["429 false"] = c.seen
					}
					if fmt.Sprint(errs) != fmt.Sprint(want) {
						t.Errorf("brainwire.upstream.errors by error.type and retried: %v; want %v", errs, want)
					}
					if got := sums(rm, telemetry.MetricUpstreamRetries, string(telemetry.AttrRetryStatus)); got["429"] != c.retried {
						t.Errorf("brainwire.upstream.retries: %v; want 429: %d", got, c.retried)
					}
				})
			}
		})
	}
}

// sums adds up a counter's points by the values of keys, joined by spaces,
// leaving out zeros.
func sums(rm metricdata.ResourceMetrics, name string, keys ...string) map[string]int64 {
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			s, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != name || !ok {
				continue
			}
			for _, dp := range s.DataPoints {
				var k []string
				for _, key := range keys {
					v, _ := dp.Attributes.Value(attribute.Key(key))
					k = append(k, v.Emit())
				}
				if dp.Value != 0 {
					out[strings.Join(k, " ")] += dp.Value
				}
			}
		}
	}
	return out
}
