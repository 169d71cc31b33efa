package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// A transcription upload the service refuses for a moment is sent again
// and counted in brainwire.upstream.retries under the operation
// "transcribe", as serve wires it.
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
		if n.Add(1) == 1 {
			w.Header().Set("retry-after-ms", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"code":"429","message":"Rate limit is exceeded."}}`)
			return
		}
		io.WriteString(w, `{"text":"heard it"}`)
	}))
	t.Cleanup(svc.Close)
	tenv := map[string]string{"AZURE_OPENAI_ENDPOINT": svc.URL, "AZURE_OPENAI_TRANSCRIPTION_DEPLOYMENT": "whisper", "AZURE_OPENAI_API_KEY": "k"}
	tr, err := openTranscriber(func(k string) string { return tenv[k] }, &credential{}, tel.observeRetry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if text, err := tr.Transcribe(t.Context(), bytes.NewReader([]byte("RIFF....WAVEfmt ")), "note.wav", "audio/wav"); err != nil || text != "heard it" {
		t.Fatalf("Transcribe = %q, %v", text, err)
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
	if count != 1 || n.Load() != 2 {
		t.Errorf("brainwire.upstream.retries{transcribe, 429} = %d after %d uploads; want 1 after 2 (%v)", count, n.Load(), m)
	}
}
