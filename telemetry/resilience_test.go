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

// TestBrokenAppInsightsNeverSlowsCaptures points Application Insights at
// an endpoint that fails every request or never answers: captures keep
// their latency, and shutting telemetry down leaves no goroutine behind.
func TestBrokenAppInsightsNeverSlowsCaptures(t *testing.T) {
	const text = "Call mom about her birthday on Sunday #long:300"
	const runs = 7
	for _, mode := range []struct {
		name string
		mode int
	}{{"500", telemetrytest.IngestFail}, {"hanging", telemetrytest.IngestHang}} {
		t.Run(mode.name, func(t *testing.T) {
			ingest := telemetrytest.NewIngestion(t, mode.mode)
			before := runtime.NumGoroutine()
			off := newStack(t, nil)
			s := newStack(t, map[string]string{"APPLICATIONINSIGHTS_CONNECTION_STRING": ingest.ConnectionString()})
			base, withAI := compareLatency(off, s, text, runs)
			t.Logf("median capture latency: %s without Application Insights, %s with a %s endpoint", base, withAI, mode.name)
			// Not a speed check (that is what benchmarks are for): a capture
			// that waited on the endpoint would wait out the send timeout,
			// seconds, which no busy machine explains.
			if withAI > base+time.Second {
				t.Errorf("captures waited on Application Insights: %s, against %s without it", withAI, base)
			}
			if ingest.Requests() == 0 && mode.mode == telemetrytest.IngestFail {
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
			ingest.Release()
			s.close()
			off.close()
			if n := settleGoroutines(before, 5*time.Second); n > before {
				t.Errorf("goroutines: %d before the servers and telemetry started, %d after all stopped\n%s", before, n, goroutineDump())
			}
		})
	}
}

// TestUnreachableCollector exports to a port nothing listens on: captures
// complete as fast as without telemetry and /health stays 200.
func TestUnreachableCollector(t *testing.T) {
	const text = "Call mom about her birthday on Sunday #long:300"
	off := newStack(t, nil)
	s := newStack(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + closedPort(t),
		"OTEL_METRIC_EXPORT_INTERVAL": "100",
	})
	base, got := compareLatency(off, s, text, 7)
	t.Logf("median capture latency: %s without telemetry, %s exporting to a closed port", base, got)
	// A capture that waited on the collector would wait out the export
	// timeout, seconds; the latencies themselves are benchmarks' business.
	if got > base+time.Second {
		t.Errorf("captures waited on the collector: %s, against %s without it", got, base)
	}
	if code := s.health(); code != http.StatusOK {
		t.Errorf("/health answered %d", code)
	}
	start := time.Now()
	err := s.shutdown(time.Second)
	t.Logf("shutdown: %v after %s", err, time.Since(start).Round(time.Millisecond))
	if time.Since(start) > 2*time.Second {
		t.Errorf("shutdown ignored its deadline")
	}
	if code := s.health(); code != http.StatusOK {
		t.Errorf("/health answered %d after telemetry shut down", code)
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
			for _, key := range []string{"reasoning_text", "gen_ai.input.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "capture_text"} {
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
