package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
)

// A person answers the agent's question on every protocol: the follow-up
// continues the item's conversation and files onto the same item, which
// is then no longer open to one.
func TestFollowUpFilesOntoTheSameItem(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			h := newHarness(t, nil, withSimulator(t))
			first := h.do("POST", p.path, testKey, "bearer", "application/json", p.text("asdf qwerty zxcv")).body
			asked := p.ending(t, first)
			before := h.inbox(testUser)
			if asked.outcome != "misunderstood" || len(before) != 1 || before[0].ID != asked.item || !strings.HasPrefix(before[0].UpstreamThreadID, "thread_") {
				t.Fatalf("first capture: %v; inbox %+v", asked, before)
			}
			path, body := p.followUp(t, first, "I meant: call my friend Sam about his birthday party")
			if e := p.ending(t, h.do("POST", path, testKey, "bearer", "application/json", body).body); e.outcome != "classified" ||
				e.item != asked.item || e.bucket != "People" {
				t.Fatalf("follow-up: %v, want item %s classified in People", e, asked.item)
			}
			items := h.inbox(testUser)
			if len(items) != 1 {
				t.Fatalf("inbox has %d items, want the one refiled", len(items))
			}
			it := items[0]
			if it.ID != asked.item || it.Status != brainwire.StatusClassified || it.UpstreamThreadID != before[0].UpstreamThreadID || it.FollowUpRounds != 1 ||
				!strings.Contains(it.RawText, "asdf qwerty zxcv") || !strings.Contains(it.RawText, "Sam") {
				t.Fatalf("item %+v", it)
			}
			if rec, err := h.store.GetBucketRecord(context.Background(), testUser, "People", it.FiledRecordID); err != nil || rec.InboxRecordID != it.ID {
				t.Fatalf("bucket record %+v, %v", rec, err)
			}
			// The item is no longer misunderstood: the same answer again is
			// a conflict.
			if r := h.do("POST", path, testKey, "bearer", "application/json", body); r.status != http.StatusConflict {
				t.Fatalf("second follow-up: %d %s", r.status, r.body)
			}
		})
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
