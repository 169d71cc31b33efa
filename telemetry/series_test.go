package telemetry_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// pointStart is when the series of the point whose attributes include
// want started, from a sum's or a histogram's points; zero when none.
func pointStart(m *metricspb.Metric, want map[string]any) time.Time {
	for _, dp := range m.GetSum().GetDataPoints() {
		if telemetrytest.HasAttrs(dp.Attributes, want) {
			return time.Unix(0, int64(dp.StartTimeUnixNano))
		}
	}
	for _, dp := range m.GetHistogram().GetDataPoints() {
		if telemetrytest.HasAttrs(dp.Attributes, want) {
			return time.Unix(0, int64(dp.StartTimeUnixNano))
		}
	}
	return time.Time{}
}

// TestSeriesStartAtTheirFirstEvent checks what makes Prometheus count a
// series from its first event: a series born late in the process's life
// (an outcome's first capture, counter and histogram alike) starts when
// it was first measured, not when the process started. Prometheus stores
// a 0 at that start (the created timestamp), so increase() sees the first
// event as an increase instead of a series that appears holding it.
func TestSeriesStartAtTheirFirstEvent(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	s := newStack(t, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": recv.Endpoint()})
	agent, err := s.srv.RefreshAgent(t.Context())
	if err != nil || agent.Version == "" {
		t.Fatalf("agent %+v, %v", agent, err)
	}
	beforeFirst := time.Now()
	if r := s.capture("Call mom about her birthday on Sunday", nil); r.outcome() != "CLASSIFIED" {
		t.Fatalf("first capture: %s", r.outcome())
	}
	time.Sleep(50 * time.Millisecond)
	beforeLate := time.Now()
	if r := s.capture("#fail Lunch with Sarah", nil); r.outcome() != "ERROR" {
		t.Fatalf("late capture: %s", r.outcome())
	}
	if err := s.shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	classified := map[string]any{"brainwire.capture.outcome": "classified"}
	failed := map[string]any{"brainwire.capture.outcome": "error"}
	for _, c := range []struct {
		metric        string
		want          map[string]any
		after, before time.Time // when the series started: after, and before (if set)
	}{
		{"brainwire.captures", classified, beforeFirst, beforeLate},
		{"brainwire.capture.time_to_outcome", classified, beforeFirst, beforeLate},
		// The version's first capture declared every outcome's count at 0.
		{"brainwire.captures", failed, beforeFirst, beforeLate},
		{"brainwire.capture.time_to_outcome", failed, beforeLate, time.Time{}},
		// Counted by the version of the agent that failed.
		{"brainwire.upstream.errors", map[string]any{"error.type": "server_error", "gen_ai.agent.version": agent.Version}, beforeLate, time.Time{}},
	} {
		m := recv.Metric(c.metric)
		if m == nil {
			t.Fatalf("no %s exported", c.metric)
		}
		start := pointStart(m, c.want)
		if start.IsZero() {
			t.Errorf("%s: no series %v", c.metric, c.want)
			continue
		}
		if start.Before(c.after) || (!c.before.IsZero() && start.After(c.before)) {
			t.Errorf("%s %v starts at %s, want after %s (and before %v, if set)", c.metric, c.want,
				start.Format(time.StampMicro), c.after.Format(time.StampMicro), c.before.Format(time.StampMicro))
		}
	}
}

// TestEveryProcessIsAnInstance checks that two telemetry setups of one
// service export under different service.instance.id values, so that
// replicas and restarts keep series of their own, and that
// OTEL_RESOURCE_ATTRIBUTES can still name the instance.
func TestEveryProcessIsAnInstance(t *testing.T) {
	instance := func(env map[string]string) string {
		recv := telemetrytest.NewReceiver(t)
		env["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"] = recv.Endpoint()
		s := newStack(t, env)
		s.capture("Call mom about her birthday on Sunday", nil)
		if err := s.shutdown(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		res := recv.MetricResources()
		if len(res) == 0 {
			t.Fatal("no metrics exported")
		}
		id, _ := telemetrytest.Attr(res[len(res)-1].Attributes, "service.instance.id").(string)
		return id
	}
	a, b := instance(map[string]string{}), instance(map[string]string{})
	if _, err := uuid.Parse(a); err != nil || a == b {
		t.Errorf("instance ids %q and %q: want two different UUIDs", a, b)
	}
	if got := instance(map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=replica-7"}); got != "replica-7" {
		t.Errorf("with OTEL_RESOURCE_ATTRIBUTES: instance %q", got)
	}
}

// TestFinalExportCountsTheFlush checks that the metrics are flushed after
// the other exporters: the last export's count of items Application
// Insights accepted is every item the ingestion endpoint received, those
// sent while shutting down included.
func TestFinalExportCountsTheFlush(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	ingest := telemetrytest.NewIngestion(t, telemetrytest.IngestOK)
	s := newStack(t, map[string]string{
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT":   recv.Endpoint(),
		"APPLICATIONINSIGHTS_CONNECTION_STRING": ingest.ConnectionString(),
	})
	s.capture("Call mom about her birthday on Sunday #long:40", nil)
	if err := s.shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	received := len(ingest.Envelopes())
	m := recv.Metric("brainwire.appinsights.items.sent")
	if sent := counterValue(m, map[string]any{}); received == 0 || sent != int64(received) {
		t.Errorf("items sent %d at the last export, the endpoint received %d", sent, received)
	}
}

// TestAProcessDeclaresWhatItCanCount checks that a process declares only
// the series its captures can count: an evaluation text captures, and no
// correction or follow-up, which no person makes on an eval's captures; a
// serving process all three kinds with their corrections and follow-ups,
// but voice only when it takes voice captures.
func TestAProcessDeclaresWhatItCanCount(t *testing.T) {
	for _, tc := range []struct {
		name          string
		eval, noVoice bool
		kinds         string
		judged        bool // correction and follow-up series declared
	}{
		{"an eval", true, false, "text", false},
		{"a server", false, false, "follow_up text voice", true},
		{"a server without voice", false, true, "follow_up text", true},
	} {
		recv := telemetrytest.NewReceiver(t)
		s := newStack(t, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": recv.Endpoint()})
		if tc.noVoice {
			s.tel.DeclareNoVoice()
		}
		c := brainwire.Capture{Kind: brainwire.KindText, UserID: "eval", RunID: "run-1", Agent: brainwire.AgentInfo{Version: "sha256:declared"}}
		if tc.eval {
			c.EvalRunID = "eval-1"
		}
		_, obs := s.tel.StartCapture(t.Context(), c)
		obs.End(brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, Bucket: "People"})
		if err := s.shutdown(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		version := map[string]any{"gen_ai.agent.version": "sha256:declared"}
		kinds := map[string]bool{}
		for _, dp := range recv.Metric(telemetry.MetricCaptures).GetSum().GetDataPoints() {
			if telemetrytest.HasAttrs(dp.Attributes, version) {
				for _, kv := range dp.Attributes {
					if kv.Key == string(telemetry.AttrKind) {
						kinds[kv.Value.GetStringValue()] = true
					}
				}
			}
		}
		versionPoints := func(name string) (n int) {
			for _, dp := range recv.Metric(name).GetSum().GetDataPoints() {
				if telemetrytest.HasAttrs(dp.Attributes, version) {
					n++
				}
			}
			return n
		}
		corrections, followUps := versionPoints(telemetry.MetricCorrections), versionPoints(telemetry.MetricFollowUps)
		got := strings.Join(slices.Sorted(maps.Keys(kinds)), " ")
		if got != tc.kinds || (corrections > 0) != tc.judged || (followUps > 0) != tc.judged {
			t.Errorf("%s declared capture kinds %q, %d correction and %d follow-up series; want %q, judged %v",
				tc.name, got, corrections, followUps, tc.kinds, tc.judged)
		}
	}
}
