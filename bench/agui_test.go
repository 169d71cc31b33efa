package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/replay"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/sqlite"
)

// BenchmarkAGUIInlineAudio posts a RunAgentInput carrying a 25 MB WAV
// file (the upload limit) inline in base64, 33 MiB of JSON, to /api/agui,
// stored in a local directory. B/op is the heap the whole process
// allocates per request, client included: what the body costs in memory
// on its way to the blob store.
func BenchmarkAGUIInlineAudio(b *testing.B) {
	dir := b.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	blobs, err := localblob.New(filepath.Join(dir, "audio"))
	if err != nil {
		b.Fatal(err)
	}
	const key = "bench-key-0123456789"
	s, err := server.New(server.Config{Keys: server.Keys{key: "bench"}, Provider: failingAgent{}, Store: st,
		Blobs: blobs, Transcriber: silentTranscriber{}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	wav := replay.SilentWAV((brainwire.MaxAudioBytes - 44) / 2)
	body, _ := json.Marshal(map[string]any{"threadId": "t", "runId": "r", "state": map[string]any{}, "messages": []any{
		map[string]any{"id": "u", "role": "user", "content": []any{map[string]any{"type": "audio",
			"source": map[string]string{"type": "data", "value": base64.StdEncoding.EncodeToString(wav), "mimeType": "audio/wav"}}}},
	}})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/agui", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
