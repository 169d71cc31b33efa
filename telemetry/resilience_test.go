package telemetry_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// compareLatency runs n captures of text on each stack, alternating so
// that a busy machine slows both alike, after a warm-up, and returns the
// median latency of each.
func compareLatency(a, b *stack, text string, n int) (time.Duration, time.Duration) {
	var la, lb []time.Duration
	for i := -2; i < n; i++ {
		ra, rb := a.capture(text, nil), b.capture(text, nil)
		if ra.outcome() != "CLASSIFIED" || rb.outcome() != "CLASSIFIED" {
			a.t.Fatalf("outcomes %s and %s", ra.outcome(), rb.outcome())
		}
		if i >= 0 {
			la, lb = append(la, ra.latency), append(lb, rb.latency)
		}
	}
	return median(la), median(lb)
}

// TestBrokenBackendsNeverSlowCaptures points Application Insights at an
// endpoint that fails every request or never answers, and OTLP at a port
// nothing listens on: captures keep their latency, /health stays 200,
// and shutting telemetry down keeps its deadline; Application Insights'
// exporter leaves no goroutine behind.
func TestBrokenBackendsNeverSlowCaptures(t *testing.T) {
	const text = "Call mom about her birthday on Sunday #long:300"
	for _, tc := range []struct {
		name string
		env  func(t *testing.T) (map[string]string, *telemetrytest.Ingestion)
	}{
		{"App Insights 500", func(t *testing.T) (map[string]string, *telemetrytest.Ingestion) {
			in := telemetrytest.NewIngestion(t, telemetrytest.IngestFail)
			return map[string]string{"APPLICATIONINSIGHTS_CONNECTION_STRING": in.ConnectionString()}, in
		}},
		{"App Insights hanging", func(t *testing.T) (map[string]string, *telemetrytest.Ingestion) {
			in := telemetrytest.NewIngestion(t, telemetrytest.IngestHang)
			return map[string]string{"APPLICATIONINSIGHTS_CONNECTION_STRING": in.ConnectionString()}, in
		}},
		{"collector unreachable", func(t *testing.T) (map[string]string, *telemetrytest.Ingestion) {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + closedPort(t), "OTEL_METRIC_EXPORT_INTERVAL": "100"}, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, ingest := tc.env(t)
			before := runtime.NumGoroutine()
			off, s := newStack(t, nil), newStack(t, env)
			base, got := compareLatency(off, s, text, 7)
			t.Logf("median capture latency: %s without telemetry, %s with it", base, got)
			// Not a speed check (that is what benchmarks are for): a capture
			// that waited on a backend would wait out a send or export
			// timeout, seconds, which no busy machine explains.
			if got > base+time.Second {
				t.Errorf("captures waited on telemetry: %s, against %s without it", got, base)
			}
			if ingest != nil && ingest.Requests() == 0 {
				// Batches go out every few seconds; make sure one was tried.
				deadline := time.Now().Add(10 * time.Second)
				for ingest.Requests() == 0 && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
			}
			start := time.Now()
			err := s.shutdown(2 * time.Second)
			t.Logf("shutdown took %s: %v", time.Since(start).Round(time.Millisecond), err)
			if time.Since(start) > 3*time.Second {
				t.Errorf("shutdown ignored its deadline")
			}
			if code := s.health(); code != http.StatusOK {
				t.Errorf("/health answered %d after telemetry shut down", code)
			}
			if ingest != nil {
				ingest.Release()
			}
			s.close()
			off.close()
			if n := settleGoroutines(before, 5*time.Second); n > before && ingest != nil {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines: %d before the servers and telemetry started, %d after all stopped\n%s", before, n, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// TestContentOff checks that with BRAINWIRE_CAPTURE_CONTENT=false no
// signal carries the capture text, reasoning text or tool arguments,
// while indices and counts remain; the same search with content on finds
// them, so the search itself is sound.
func TestContentOff(t *testing.T) {
	const marker = "Zebracornelius"
	text := "Call mom about " + marker + " birthday on Sunday #long:40"
	for _, content := range []bool{true, false} {
		t.Run(fmt.Sprintf("content=%v", content), func(t *testing.T) {
			recv := telemetrytest.NewReceiver(t)
			ingest := telemetrytest.NewIngestion(t, telemetrytest.IngestOK)
			s := newStack(t, map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":           recv.Endpoint(),
				"APPLICATIONINSIGHTS_CONNECTION_STRING": ingest.ConnectionString(),
				"BRAINWIRE_CAPTURE_CONTENT":             fmt.Sprint(content),
				"OTEL_METRIC_EXPORT_INTERVAL":           "50",
			})
			if _, err := s.srv.RefreshAgent(t.Context()); err != nil { // its instructions are content too
				t.Fatal(err)
			}
			r := s.capture(text, nil)
			if err := s.shutdown(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			chunks := s.chunks.get(r.runID)
			// Reasoning chunks of the simulator's that no attribute name
			// or id contains, and the capture text's odd word.
			needles := []string{marker, "Keyword", "(offline", "simulator,", "Calling file_capture."}
			var all strings.Builder
			for _, c := range chunks {
				all.WriteString(c.Text)
			}
			for _, n := range needles {
				if !strings.Contains(all.String(), n) {
					t.Fatalf("%q is not in the reasoning; the simulator changed: %q", n, all.String())
				}
				inTraces, inAI := recv.Contains(n), ingest.Contains(n)
				if content && (!inTraces || !inAI) {
					t.Errorf("content on: %q missing (traces %v, App Insights %v)", n, inTraces, inAI)
				}
				if !content && (inTraces || inAI) {
					t.Errorf("content off: %q found (traces %v, App Insights %v)", n, inTraces, inAI)
				}
			}
			for _, key := range []string{"reasoning_text", "gen_ai.input.messages", "gen_ai.system_instructions", "gen_ai.output.messages",
				"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "capture_text"} {
				if got := recv.Contains(`"`+key+`"`) || ingest.Contains(`"`+key+`"`); got != content {
					t.Errorf("key %s present = %v, want %v", key, got, content)
				}
			}
			agent := findAgentSpan(t, recv, r.runID)
			checkChunkEvents(t, agent, r, len(chunks), content)
			checkAppInsights(t, ingest, agent, r, len(chunks), content)
		})
	}
}
