package server_test

import (
	"context"
	"encoding/json"
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
