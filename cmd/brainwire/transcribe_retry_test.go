package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// A transcription upload the service refuses for a moment is sent again
// and counted in brainwire.upstream.retries under the operation
// "transcribe", as serve wires it; each refused attempt is counted in
// brainwire.upstream.errors, as retried or as having reached the capture.
func TestRefusedTranscriptionIsCounted(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint()}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.Endpoint())
	tel, err := setupTelemetry(context.Background(), config{}, func(k string) string { return env[k] }, io.Discard, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch n.Add(1) {
		case 1:
			w.Header().Set("retry-after-ms", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"code":"429","message":"Rate limit is exceeded."}}`)
		case 2:
			io.WriteString(w, `{"text":"heard it"}`)
		default:
			// Down for good: the upload and its two retries.
			w.Header().Set("retry-after-ms", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":"503","message":"Service unavailable."}}`)
		}
	}))
	t.Cleanup(svc.Close)
	tenv := map[string]string{"AZURE_OPENAI_ENDPOINT": svc.URL, "AZURE_OPENAI_TRANSCRIPTION_DEPLOYMENT": "whisper", "AZURE_OPENAI_API_KEY": "k"}
	tr, err := openTranscriber(func(k string) string { return tenv[k] }, newCredential(), tel.upstream, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if text, err := tr.Transcribe(t.Context(), bytes.NewReader([]byte("RIFF....WAVEfmt ")), "note.wav", "audio/wav"); err != nil || text != "heard it" {
		t.Fatalf("Transcribe = %q, %v", text, err)
	}
	if _, err := tr.Transcribe(t.Context(), bytes.NewReader([]byte("RIFF....WAVEfmt ")), "note.wav", "audio/wav"); err == nil {
		t.Fatal("a transcription the service refused three times succeeded")
	}
	tel.shutdown()
	m := recv.Metric("brainwire.upstream.retries")
	var count int64
	for _, dp := range m.GetSum().GetDataPoints() {
		if telemetrytest.Attr(dp.Attributes, "gen_ai.operation.name") == "transcribe" &&
			telemetrytest.Attr(dp.Attributes, "brainwire.upstream.retry.status") == "429" {
			count += dp.GetAsInt()
		}
	}
	if count != 1 || n.Load() != 5 {
		t.Errorf("brainwire.upstream.retries{transcribe, 429} = %d after %d uploads; want 1 after 5 (%v)", count, n.Load(), m)
	}
	errs := map[string]int64{}
	for _, dp := range recv.Metric("brainwire.upstream.errors").GetSum().GetDataPoints() {
		errs[fmt.Sprintf("%v retried=%v", telemetrytest.Attr(dp.Attributes, "error.type"), telemetrytest.Attr(dp.Attributes, "brainwire.upstream.error.retried"))] += dp.GetAsInt()
	}
	want := map[string]int64{"429 retried=true": 1, "503 retried=true": 2, "503 retried=false": 1}
	if !maps.Equal(errs, want) {
		t.Errorf("brainwire.upstream.errors = %v, want %v", errs, want)
	}
}
