package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
)

func TestFollowUpFilesOntoTheSameItem(t *testing.T) {
	h := newHarness(t, nil, withSimulator(t))
	frames := h.capture("asdf qwerty zxcv")
	if len(frames) != 4 || frames[2].Data["type"] != "MISUNDERSTOOD" {
		t.Fatalf("first capture:\n%s", payloads(frames))
	}
	mis := frames[2].Data["value"].(map[string]any)
	itemID, conversation := mis["inboxItemId"].(string), mis["foundryConversationId"].(string)
	if mis["questionText"] == "" || !strings.HasPrefix(conversation, "thread_") {
		t.Fatalf("misunderstood value %v", mis)
	}

	body, _ := json.Marshal(map[string]any{"inbox_item_id": itemID, "follow_up_text": "I meant: call my friend Sam about his birthday party", "follow_up_round": 1})
	frames = h.readStream(h.post("/api/capture/follow-up", "application/json", string(body)))
	var types []string
	for _, f := range frames {
		types = append(types, f.Data["type"].(string))
	}
	if strings.Join(types, ",") != "STEP_START,STEP_END,CLASSIFIED,COMPLETE" {
		t.Fatalf("follow-up:\n%s", payloads(frames))
	}
	value := frames[2].Data["value"].(map[string]any)
	if value["inboxItemId"] != itemID || value["bucket"] != "People" {
		t.Fatalf("follow-up filed %v, want item %s in People", value, itemID)
	}

	items := h.inbox(testUser)
	if len(items) != 1 {
		t.Fatalf("inbox has %d items, want the one refiled", len(items))
	}
	it := items[0]
	if it.ID != itemID || it.Status != brainwire.StatusClassified || it.UpstreamThreadID != conversation || it.FollowUpRounds != 1 ||
		!strings.Contains(it.RawText, "asdf qwerty zxcv") || !strings.Contains(it.RawText, "Sam") {
		t.Fatalf("item %+v", it)
	}
	rec, err := h.store.GetBucketRecord(context.Background(), testUser, "People", it.FiledRecordID)
	if err != nil || rec.InboxRecordID != itemID {
		t.Fatalf("bucket record %+v, %v", rec, err)
	}

	// The item is no longer misunderstood: another follow-up is a conflict.
	r := h.do("POST", "/api/capture/follow-up", testKey, "bearer", "application/json", string(body))
	if r.status != 409 || !strings.Contains(r.detail, "not misunderstood") {
		t.Fatalf("second follow-up: %d %s", r.status, r.body)
	}
}

func TestFollowUpContinuesTheStoredThread(t *testing.T) {
	r := ft.NewRun("thread_stored", "run_02")
	c := ft.Classify{Run: r, Reasoning: []string{"Now", " clear."},
		Call:   ft.FileCaptureCall("call_1", "x", "Projects", 0.85, "classified"),
		Output: `{}`, Reply: []string{"Done."}, Usage: ft.Usage{Prompt: 5, Completion: 5, Total: 10}}
	create := []ft.Event{r.Created(), r.Queued(), r.InProgress()}
	create = append(create, r.Message("msg_01", c.Reasoning...)...)
	create = append(create, r.ToolCallStep("step_01", c.Call)...)
	create = append(create, r.RequiresAction(c.Call), ft.Done())
	h := newHarness(t, []ft.Call{
		ft.Expect("POST /threads/thread_stored/runs", ft.Stream(create...)),
		ft.Expect("POST /threads/thread_stored/runs/run_02/submit_tool_outputs", ft.Stream(c.Continuation()...)),
	})
	h.file(testUser, "m1", brainwire.StatusMisunderstood, "", fixedNow)
	if _, err := h.store.File(context.Background(), brainwire.Filing{UserID: testUser, InboxItemID: "m1", NewInboxID: "unused", NewRecordID: "unused2",
		RawText: "launch thing", Source: brainwire.KindText, Status: brainwire.StatusMisunderstood,
		Classification: brainwire.Classification{ClassifiedAt: fixedNow}, UpstreamThreadID: "thread_stored", FollowUpRound: 1, Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	frames := h.readStream(h.post("/api/capture/follow-up", "application/json",
		`{"inbox_item_id":"m1","follow_up_text":"the website launch project","follow_up_round":2}`))
	if got := payloads(frames); !strings.Contains(got, `"type":"CLASSIFIED","value":{"inboxItemId":"m1","bucket":"Projects"`) {
		t.Fatalf("stream:\n%s", got)
	}
	run := h.up.Find("POST /threads/thread_stored/runs")[0].Body
	msgs := run["additional_messages"].([]any)
	if len(msgs) != 1 || !strings.Contains(mustJSON(msgs[0]), "the website launch project") ||
		!strings.Contains(run["additional_instructions"].(string), "round 2 of 3") {
		t.Fatalf("run on the stored thread: %s", mustJSON(run))
	}
	if items := h.inbox(testUser); len(items) != 1 || items[0].ID != "m1" || items[0].Status != "classified" || items[0].FollowUpRounds != 2 {
		t.Fatalf("inbox %+v", items)
	}
}
