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
