package bench

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/replay"
)

// BenchmarkAGUIInlineAudio posts a RunAgentInput carrying a 25 MB WAV
// file (the upload limit) inline in base64, 33 MiB of JSON, to /api/agui,
// stored in a local directory. B/op is the heap the whole process
// allocates per request, client included: what the body costs in memory
// on its way to the blob store.
func BenchmarkAGUIInlineAudio(b *testing.B) {
	srv := newVoiceServer(b)

	wav := replay.SilentWAV((brainwire.MaxAudioBytes - 44) / 2)
	body, _ := json.Marshal(map[string]any{"threadId": "t", "runId": "r", "state": map[string]any{}, "messages": []any{
		map[string]any{"id": "u", "role": "user", "content": []any{map[string]any{"type": "audio",
			"source": map[string]string{"type": "data", "value": base64.StdEncoding.EncodeToString(wav), "mimeType": "audio/wav"}}}},
	}})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		postVoice(b, srv, "/api/agui", "application/json", bytes.NewReader(body))
	}
}
