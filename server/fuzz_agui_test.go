package server_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

// The request decoding of the AG-UI and legacy routes, fuzzed through
// fuzzServer.check like every other route.

// fuzzJSONRoute fuzzes the JSON body of a POST route from seeds (which may
// name the seeded documents) and the malformed bodies every route refuses.
func fuzzJSONRoute(f *testing.F, path string, seeds func(*fuzzServer) []string) {
	s := newFuzzServer(f)
	for _, b := range append(seeds(s), malformedJSON...) {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s.check(t, s.request(http.MethodPost, path, "", "application/json", body, testKey))
	})
}

func FuzzAGUIRequest(f *testing.F) {
	wav := base64.StdEncoding.EncodeToString([]byte("RIFF\x24\x00\x00\x00WAVEfmt "))
	fuzzJSONRoute(f, "/api/agui", func(s *fuzzServer) []string {
		followUp := func(id string, round int) string {
			return `{"capture":{"outcome":"misunderstood","inboxItemId":"` + id + `","followUpRound":` + string(rune('0'+round)) + `}}`
		}
		return []string{
			runInput("Call mom about her birthday", `{}`, `{"reasoning":true}`),
			runInput([]map[string]string{{"type": "text", "text": "Pay the bill #no-tool"}}, `null`, `[]`),
			runInput("hmm #fail", `{}`, `{}`),
			runInput("I meant my sister", followUp(s.misunderstood.ID, 0), `{}`),
			runInput("x", followUp(s.misunderstood.ID, 7), `{}`),
			runInput("I meant my sister", followUp(s.bobs.ID, 0), `{}`),
			runInput([]map[string]any{{"type": "audio", "source": map[string]string{"type": "data", "value": wav, "mimeType": "audio/wav"}}}, `{}`, `{}`),
			runInput([]map[string]any{{"type": "audio", "source": map[string]string{"type": "url", "value": "http://x/"}}}, `{}`, `{}`),
			`{"threadId":"t","runId":"r","messages":[{"role":"user","content":"` + strings.Repeat("a", 20000) + `"}]}`,
		}
	})
}

func FuzzLegacyCaptureRequest(f *testing.F) {
	fuzzJSONRoute(f, "/api/ag-ui", func(*fuzzServer) []string {
		return []string{
			`{"messages":[{"id":"m","role":"user","content":"Call mom"}],"thread_id":"thread-1","run_id":"run-1"}`,
			`{"messages":[{"content":"Pay the bill #fail"}],"state":{}}`,
			`{"messages":[{"role":"user","content":["x"]}]}`,
			`{"messages":[{"role":"user","content":"x"}],"thread_id":"a b"}`,
		}
	})
}

func FuzzLegacyFollowUpRequest(f *testing.F) {
	fuzzJSONRoute(f, "/api/ag-ui/follow-up", func(s *fuzzServer) []string {
		m := s.misunderstood.ID
		return []string{
			`{"inbox_item_id":"` + m + `","follow_up_text":"I meant my sister","follow_up_round":1}`,
			`{"inbox_item_id":"` + m + `","follow_up_text":"x"}`,
			`{"inbox_item_id":"` + s.pending.ID + `","follow_up_text":"x","follow_up_round":2}`,
			`{"inbox_item_id":"` + s.bobs.ID + `","follow_up_text":"x","follow_up_round":1}`,
			`{"inbox_item_id":"nope","follow_up_text":"x","follow_up_round":1}`,
			`{"inbox_item_id":"../` + m + `","follow_up_text":"x","follow_up_round":1}`,
		}
	})
}

func FuzzLegacyRespondRequest(f *testing.F) {
	fuzzJSONRoute(f, "/api/ag-ui/respond", func(s *fuzzServer) []string {
		p := s.pending.ID
		return []string{
			`{"thread_id":"thread-1","response":"Projects","inbox_item_id":"` + p + `"}`,
			`{"thread_id":"thread-1","response":"Misc","inbox_item_id":"` + p + `"}`,
			`{"thread_id":"thread-1","response":"Ideas","inbox_item_id":"` + s.bobs.ID + `"}`,
			`{"response":"People","inbox_item_id":"nope"}`,
			`{"thread_id":"a\u0000b","response":"People","inbox_item_id":"` + p + `"}`,
		}
	})
}

func FuzzLegacyVoiceRequest(f *testing.F) {
	s := newFuzzServer(f)
	ct := "multipart/form-data; boundary=" + fuzzBoundary
	wav := "RIFF\x24\x01\x00\x00WAVEfmt " + strings.Repeat("\x00", 256)
	for _, parts := range [][][4]string{
		{{"file", "voice-capture.m4a", "audio/m4a", "\x00\x00\x00\x20ftypM4A audio"}},
		{{"file", "a.wav", "audio/wav", wav}, {"file", "b.wav", "audio/wav", wav}},
		{{"file", "notes.txt", "text/plain", "hello"}},
		{{"file", "empty.wav", "audio/wav", ""}},
		{{"thread_id", "", "", "t 1"}, {"file", "a.wav", "audio/wav", wav}},
		{},
	} {
		f.Add(multipartBody(parts...))
	}
	f.Add([]byte("--" + fuzzBoundary + "\r\n\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		s.check(t, s.request(http.MethodPost, "/api/voice-capture", "", ct, body, testKey))
	})
}
