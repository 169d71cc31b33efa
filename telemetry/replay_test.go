package telemetry_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// A repeated request answered from its Idempotency-Key is a replay: it
// counts in brainwire.capture.replays, and not as a capture.
func TestReplaysAreNotCaptures(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	s := newStack(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint()})
	for i := range 3 {
		req, _ := http.NewRequest("POST", s.url+"/api/capture", strings.NewReader(`{"text":"Call mom about her birthday on Sunday"}`))
		req.Header.Set("Authorization", "Bearer "+apiKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", `"once"`)
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if replayed := resp.Header.Get("Idempotent-Replayed") == "true"; replayed != (i > 0) || !strings.Contains(string(b), `"CLASSIFIED"`) {
			t.Fatalf("request %d: replayed %v\n%s", i, replayed, b)
		}
	}
	if err := s.shutdown(10e9); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if n := counterValue(recv.Metric("brainwire.capture.replays"), map[string]any{"brainwire.capture.outcome": "classified",
		"brainwire.capture.kind": "text"}); n != 2 {
		t.Errorf("brainwire.capture.replays = %d, want 2", n)
	}
	if n := counterValue(recv.Metric("brainwire.captures"), map[string]any{}); n != 1 {
		t.Errorf("brainwire.captures = %d, want 1", n)
	}
}
