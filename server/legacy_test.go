package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
)

// legacyBody is POST /api/ag-ui's body as earlier app builds send it.
func legacyBody(text string) string {
	b, _ := json.Marshal(map[string]any{
		"messages":  []map[string]string{{"id": "msg-1", "role": "user", "content": text}},
		"thread_id": "thread-1700000000000", "run_id": "run-1700000000000",
	})
	return string(b)
}

func TestLegacyRejectsBadRequestsBeforeStreaming(t *testing.T) {
	h := newHarness(t, nil, withTranscriber(stubTranscriber{"x"}))
	h.file(testUser, "p1", brainwire.StatusPending, "Ideas", fixedNow)
	h.file("bob", "b1", brainwire.StatusPending, "Ideas", fixedNow)
	cases := []struct {
		name, path, contentType, body string
		status                        int
		detail                        string
	}{
		{"capture: malformed JSON", "/api/ag-ui", "application/json", `{"messages":`, 400, "malformed JSON body"},
		{"capture: no user message", "/api/ag-ui", "application/json", `{"messages":[{"role":"assistant","content":"hi"}]}`, 400, "no user message"},
		{"capture: content not a string", "/api/ag-ui", "application/json", `{"messages":[{"role":"user","content":[1]}]}`, 400, "malformed JSON body"},
		{"capture: text too long", "/api/ag-ui", "application/json", legacyBody(strings.Repeat("é", 10001)), 413, "the limit is 10000"},
		{"capture: body too large", "/api/ag-ui", "application/json", legacyBody(strings.Repeat("a", 70<<10)), 413, "request body is over"},
		{"capture: wrong content type", "/api/ag-ui", "text/plain", legacyBody("x"), 415, "Content-Type must be"},
		{"capture: bad thread id", "/api/ag-ui", "application/json", `{"messages":[{"role":"user","content":"x"}],"thread_id":"a b"}`, 400, "thread_id"},
		{"follow-up: no item", "/api/ag-ui/follow-up", "application/json", `{"follow_up_text":"x"}`, 400, "inbox_item_id is required"},
		{"follow-up: unknown item", "/api/ag-ui/follow-up", "application/json", `{"inbox_item_id":"nope","follow_up_text":"x"}`, 404, ""},
		{"follow-up: item not misunderstood", "/api/ag-ui/follow-up", "application/json", `{"inbox_item_id":"p1","follow_up_text":"x"}`, 409, "not misunderstood"},
		{"follow-up: round out of range", "/api/ag-ui/follow-up", "application/json", `{"inbox_item_id":"p1","follow_up_text":"x","follow_up_round":9}`, 400, "follow_up_round"},
		{"respond: no item", "/api/ag-ui/respond", "application/json", `{"thread_id":"t","response":"People"}`, 400, "inbox_item_id is required"},
		{"respond: not a bucket", "/api/ag-ui/respond", "application/json", `{"thread_id":"t","response":"Misc","inbox_item_id":"p1"}`, 400, "response must be one of"},
		{"respond: unknown item", "/api/ag-ui/respond", "application/json", `{"thread_id":"t","response":"People","inbox_item_id":"nope"}`, 404, ""},
		{"respond: another user's item", "/api/ag-ui/respond", "application/json", `{"thread_id":"t","response":"People","inbox_item_id":"b1"}`, 404, ""},
		{"respond: bad thread id", "/api/ag-ui/respond", "application/json", `{"thread_id":"a\nb","response":"People","inbox_item_id":"p1"}`, 400, "thread_id"},
		{"voice: not multipart", "/api/voice-capture", "application/json", `{}`, 415, "multipart/form-data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do("POST", c.path, testKey, "bearer", c.contentType, c.body)
			if r.status != c.status || !strings.Contains(r.detail, c.detail) {
				t.Fatalf("got %d %s, want %d with %q", r.status, r.body, c.status, c.detail)
			}
		})
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls for rejected requests", n)
	}
	// Nothing was filed or moved.
	for _, id := range []string{"p1"} {
		it, err := h.store.GetInboxItem(context.Background(), testUser, id)
		if err != nil || it.Status != brainwire.StatusPending || it.ClassificationMeta.Bucket != "Ideas" {
			t.Fatalf("item %s changed: %+v %v", id, it, err)
		}
	}
	if n := len(h.inbox(testUser)); n != 1 {
		t.Fatalf("%d items", n)
	}
}

// The person picks a bucket for a low-confidence capture: the item moves
// there, as recategorize moves it, and the stream says so.
func TestLegacyRespondFilesThePickedBucket(t *testing.T) {
	h := newHarness(t, nil)
	before := h.file(testUser, "p1", brainwire.StatusPending, "Ideas", fixedNow)
	frames := h.readStream(h.post("/api/ag-ui/respond", "application/json", `{"thread_id":"thread-99","response":"Projects","inbox_item_id":"p1","extra":true}`))
	want := strings.Join([]string{
		`{"type":"RUN_STARTED","threadId":"thread-99","runId":"run-id1"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"run-id1-result","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"run-id1-result","delta":"Filed → Projects"}`,
		`{"type":"TEXT_MESSAGE_END","messageId":"run-id1-result"}`,
		`{"type":"CUSTOM","name":"CLASSIFIED","value":{"inboxItemId":"p1","bucket":"Projects"}}`,
		`{"type":"RUN_FINISHED","threadId":"thread-99","runId":"run-id1"}`,
	}, "\n")
	if got := payloads(frames); got != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
	}
	it, err := h.store.GetInboxItem(context.Background(), testUser, "p1")
	if err != nil || it.Status != brainwire.StatusClassified || it.ClassificationMeta.Bucket != "Projects" ||
		it.ClassificationMeta.ClassifiedBy != "user" || it.FiledRecordID != before.FiledRecordID {
		t.Fatalf("item %+v, %v", it, err)
	}
	if rec, err := h.store.GetBucketRecord(context.Background(), testUser, "Projects", it.FiledRecordID); err != nil || rec.InboxRecordID != "p1" {
		t.Fatalf("bucket record %+v, %v", rec, err)
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls: picking a bucket runs no agent", n)
	}
}

func TestLegacyFollowUp(t *testing.T) {
	h := newHarness(t, nil, withSimulator(t))
	frames := h.readStream(h.post("/api/ag-ui", "application/json", legacyBody("asdf qwerty zxcv")))
	var mis map[string]any
	for _, f := range frames {
		if f.Data["name"] == "MISUNDERSTOOD" {
			mis = f.Data["value"].(map[string]any)
		}
	}
	if mis == nil || mis["threadId"] != "thread-1700000000000" || mis["questionText"] == "" {
		t.Fatalf("first capture:\n%s", payloads(frames))
	}
	// Earlier builds may leave out the round: it is the first.
	body := fmt.Sprintf(`{"inbox_item_id":%q,"follow_up_text":"I meant call my friend Sam about his birthday"}`, mis["inboxItemId"])
	frames = h.readStream(h.post("/api/ag-ui/follow-up", "application/json", body))
	got := payloads(frames)
	if !strings.Contains(got, `"name":"CLASSIFIED","value":{"inboxItemId":"`+mis["inboxItemId"].(string)+`","bucket":"People"`) ||
		!strings.HasSuffix(got, `"type":"RUN_FINISHED","threadId":"thread-id3","runId":"run-id4"}`) {
		t.Fatalf("follow-up:\n%s", got)
	}
	if items := h.inbox(testUser); len(items) != 1 || items[0].FollowUpRounds != 1 {
		t.Fatalf("inbox %+v", items)
	}
}

func TestLegacyVoice(t *testing.T) {
	_, tr := newTranscriptionAPI(t, "Renew my passport")
	h := newHarness(t, nil, withSimulator(t), withTranscriber(tr))
	ct, body := voiceBody(t, "voice-capture.m4a", "audio/m4a", []byte("....ftypM4A audio"))
	got := payloads(h.readStream(h.post("/api/voice-capture", ct, body)))
	if !strings.Contains(got, `{"type":"STEP_STARTED","stepName":"Processing"}`) ||
		!strings.Contains(got, `"name":"CLASSIFIED"`) || !strings.Contains(got, `"bucket":"Admin"`) ||
		!strings.HasSuffix(got, `"type":"RUN_FINISHED","threadId":"thread-id1","runId":"run-id2"}`) {
		t.Fatalf("stream:\n%s", got)
	}
	if items := h.inbox(testUser); len(items) != 1 || items[0].Source != brainwire.KindVoice {
		t.Fatalf("inbox %+v", items)
	}
}
