package simulator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/brainwire/brainwire/simulator"
)

// BenchmarkStream measures the first turn of a capture on each face, as
// the load tool drives it: the request, the classification and the whole
// event stream written and read back over loopback, unpaced.
func BenchmarkStream(b *testing.B) {
	sim := simulator.New(simulator.Config{ChunkDelay: -1, Now: func() time.Time { return testClock }})
	srv := httptest.NewServer(sim)
	b.Cleanup(srv.Close)
	hc := srv.Client()
	post := func(b *testing.B, path string, body any) []byte {
		raw, err := json.Marshal(body)
		if err != nil {
			b.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(raw))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer bench")
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("POST %s: %d %v: %s", path, resp.StatusCode, err, out)
		}
		return out
	}
	const capture = "Call mom about her birthday on Sunday, and ask Sarah about the gift #long:3"
	b.Run("threads", func(b *testing.B) {
		body := map[string]any{"assistant_id": testAgent, "instructions": testInstructions, "stream": true,
			"thread": map[string]any{"messages": []any{userMessage(capture)}}, "tools": json.RawMessage(testTools)}
		for b.Loop() {
			b.SetBytes(int64(len(post(b, simulator.ProjectPath+"/threads/runs?api-version="+apiVersion, body))))
		}
	})
	b.Run("responses", func(b *testing.B) {
		body := map[string]any{"model": "m", "input": userInput(capture), "tools": responsesTools, "stream": true,
			"store": false, "reasoning": map[string]any{"summary": "auto"}}
		for b.Loop() {
			b.SetBytes(int64(len(post(b, simulator.ProjectPath+responsesPath+"/responses", body))))
		}
	})
	b.Run("adk", func(b *testing.B) {
		for b.Loop() {
			var session struct{ ID string }
			json.Unmarshal(post(b, "/apps/brainwire_classifier/users/u-1/sessions", map[string]any{}), &session)
			b.SetBytes(int64(len(post(b, "/run_sse", runBody(session.ID, text(capture))))))
		}
	})
}
