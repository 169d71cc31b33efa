package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/protocol/v1"
)

// legacyReply is what an earlier app build made of one v1 stream.
type legacyReply struct {
	Events    []map[string]any
	Callbacks [][]any
	Errors    []map[string]any
}

// callback returns the first callback named name, or nil.
func (r legacyReply) callback(name string) []any {
	for _, c := range r.Callbacks {
		if c[0] == name {
			return c
		}
	}
	return nil
}

// runLegacyClient sends one request as earlier app builds do (react-native-sse,
// parsing on the message listener) and returns what the app made of it.
func runLegacyClient(t *testing.T, url, key, contentType, body string) legacyReply {
	t.Helper()
	var got legacyReply
	runNodeClient(t, "react-native-sse", "legacy-client.cjs", &got, url, key, body, contentType)
	return got
}

// wantCallbacks checks what the app did, in order, and that nothing went
// wrong on the way: no transport error, nothing after the stream's end.
func wantCallbacks(t *testing.T, r legacyReply, want ...string) {
	t.Helper()
	var got []string
	for _, c := range r.Callbacks {
		got = append(got, strings.TrimSuffix(fmt.Sprintln(c...), "\n"))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(r.Errors) != 0 {
		t.Fatalf("the app did\n%s\n(errors %v), want\n%s\nevents: %v", strings.Join(got, "\n"), r.Errors, strings.Join(want, "\n"), r.Events)
	}
}

func legacyCapture(text string) string {
	b, _ := json.Marshal(map[string]any{
		"messages":  []map[string]string{{"id": "msg-1", "role": "user", "content": text}},
		"thread_id": "thread-1764000000000", "run_id": "run-1764000000000",
	})
	return string(b)
}

// TestLegacyAppBuildsParseTheV1Routes drives every route earlier app builds
// call with their SSE client, the way they parse it, through each outcome
// and the flows that follow one: picking a bucket, answering a question.
func TestLegacyAppBuildsParseTheV1Routes(t *testing.T) {
	transcriber := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("api-key") != "transcription-key" || !strings.HasSuffix(r.URL.Path, "/openai/deployments/whisper/audio/transcriptions") {
			http.Error(w, `{"error":{"code":"401","message":"Access denied"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"text":"Renew my passport and pay the electricity bill"}`)
	}))
	defer transcriber.Close()
	base := startServe(t, map[string]string{
		"AZURE_OPENAI_ENDPOINT": transcriber.URL, "AZURE_OPENAI_TRANSCRIPTION_DEPLOYMENT": "whisper", "AZURE_OPENAI_API_KEY": "transcription-key",
	})
	post := func(t *testing.T, path, body string) legacyReply {
		return runLegacyClient(t, base+path, phoneKey, "application/json", body)
	}

	t.Run("classified", func(t *testing.T) {
		r := post(t, "/api/ag-ui", legacyCapture("Call mom about her birthday on Sunday"))
		c := r.callback("onClassified")
		wantCallbacks(t, r, "onStepStart Classifying", "onStepFinish Classifying", "onTextDelta Filed → People (0.95)",
			fmt.Sprint("onClassified ", c[1], " People"), "onComplete Filed → People (0.95)")
	})

	t.Run("low confidence, then the person picks the bucket", func(t *testing.T) {
		r := post(t, "/api/ag-ui", legacyCapture("Ask Sarah about the deadline"))
		hitl := r.callback("onHITLRequired")
		if hitl == nil {
			t.Fatalf("no bucket question: %v", r.Callbacks)
		}
		threadID, question, itemID := hitl[1].(string), hitl[2].(string), hitl[3].(string)
		if threadID != "thread-1764000000000" || !strings.Contains(question, "People") || itemID == "" {
			t.Fatalf("HITL_REQUIRED gave the app %q, %q, %q", threadID, question, itemID)
		}
		wantCallbacks(t, r, "onStepStart Classifying", "onStepFinish Classifying", "onTextDelta Filed (needs review) → People (0.33)",
			fmt.Sprint("onHITLRequired ", threadID, " ", question, " ", itemID))

		body, _ := json.Marshal(map[string]string{"thread_id": threadID, "response": "Projects", "inbox_item_id": itemID})
		r = post(t, "/api/ag-ui/respond", string(body))
		wantCallbacks(t, r, "onTextDelta Filed → Projects", "onClassified "+itemID+" Projects", "onComplete Filed → Projects")
	})

	t.Run("misunderstood, then the person answers", func(t *testing.T) {
		r := post(t, "/api/ag-ui", legacyCapture("asdf qwerty zxcv"))
		mis := r.callback("onMisunderstood")
		if mis == nil || mis[2] == "" || r.callback("onComplete") != nil {
			t.Fatalf("the app did %v", r.Callbacks)
		}
		itemID := mis[3].(string)
		body, _ := json.Marshal(map[string]any{"inbox_item_id": itemID, "follow_up_text": "I meant call my sister about her birthday", "follow_up_round": 1})
		r = post(t, "/api/ag-ui/follow-up", string(body))
		wantCallbacks(t, r, "onStepStart Classifying", "onStepFinish Classifying", "onTextDelta Filed → People (0.95)",
			"onClassified "+itemID+" People", "onComplete Filed → People (0.95)")
	})

	t.Run("unresolved, then the person files it", func(t *testing.T) {
		r := post(t, "/api/ag-ui", legacyCapture("Call mom about her birthday #no-tool"))
		un := r.callback("onUnresolved")
		if un == nil || un[1] == "" {
			t.Fatalf("the app was not given the kept item: %v", r.Callbacks)
		}
		itemID := un[1].(string)
		wantCallbacks(t, r, "onStepStart Classifying", "onStepFinish Classifying", "onTextDelta "+v1.UnresolvedText,
			"onUnresolved "+itemID, "onComplete "+v1.UnresolvedText)

		body, _ := json.Marshal(map[string]string{"thread_id": "thread-1764000000000", "response": "People", "inbox_item_id": itemID})
		r = post(t, "/api/ag-ui/respond", string(body))
		wantCallbacks(t, r, "onTextDelta Filed → People", "onClassified "+itemID+" People", "onComplete Filed → People")
	})

	t.Run("failed run", func(t *testing.T) {
		r := post(t, "/api/ag-ui", legacyCapture("Renew the car insurance before Friday #fail"))
		wantCallbacks(t, r, "onStepStart Classifying", "onError Run failed")
	})

	t.Run("voice", func(t *testing.T) {
		// What those builds upload: an m4a recording in a multipart file
		// part (bytes that survive the Node client's text body).
		const boundary = "legacy-boundary"
		body := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"voice-capture.m4a\"\r\n" +
			"Content-Type: audio/m4a\r\n\r\n....ftypM4A recorded audio\r\n--" + boundary + "--\r\n"
		r := runLegacyClient(t, base+"/api/voice-capture", phoneKey, "multipart/form-data; boundary="+boundary, body)
		c := r.callback("onClassified")
		wantCallbacks(t, r, "onStepStart Processing", "onStepFinish Processing", "onTextDelta Filed → Admin (0.95)",
			fmt.Sprint("onClassified ", c[1], " Admin"), "onComplete Filed → Admin (0.95)")
	})

	t.Run("wrong key", func(t *testing.T) {
		r := runLegacyClient(t, base+"/api/ag-ui", "wrong-key-0123456789abcdef", "application/json", legacyCapture("x"))
		if len(r.Errors) != 1 || r.Errors[0]["status"] != float64(401) || len(r.Events) != 0 {
			t.Fatalf("reply %+v", r)
		}
	})
}
