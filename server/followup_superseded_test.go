package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/server"
)

// A follow-up whose item a person recategorizes or deletes while the
// agent works files nothing, and its client is told so on every protocol:
// the protocol's error event says the item was changed (or deleted), with
// the store's code, not that the agent failed or left the capture
// unresolved.
func TestFollowUpSupersededByAPersonSaysSo(t *testing.T) {
	for _, p := range protocols {
		for _, edit := range []struct {
			name, method, path, body, code, says string
		}{
			{"recategorized", "PATCH", "/recategorize", `{"bucket":"Ideas"}`, brainwire.EConflict, "changed"},
			{"deleted", "DELETE", "", "", brainwire.ENotFound, "deleted"},
		} {
			t.Run(p.name+"/"+edit.name, func(t *testing.T) {
				reached, gate := make(chan struct{}, 1), make(chan struct{})
				var gated atomic.Bool
				ends := &recorder{}
				h := newHarness(t, nil, withSimulator(t), withObserver(ends), func(c *server.Config) {
					c.WrapTools = func(set brainwire.ToolSet) brainwire.ToolSet {
						if !gated.Load() {
							return set
						}
						return gatedTools{ToolSet: set, reached: reached, gate: gate}
					}
				})
				first := h.do("POST", p.path, testKey, "bearer", "application/json", p.text("asdf qwerty zxcv")).body
				itemID := p.ending(t, first).item
				path, body := p.followUp(t, first, "I meant: call my friend Sam about his birthday party")
				gated.Store(true)

				done := make(chan reply, 1)
				go func() {
					done <- h.send(http.MethodPost, path, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + testKey}},
						strings.NewReader(body))
				}()
				waitFor(t, reached, "the follow-up's file_capture")
				contentType := "application/json"
				if edit.body == "" {
					contentType = ""
				}
				if r := h.do(edit.method, "/api/inbox/"+itemID+edit.path, testKey, "bearer", contentType, edit.body); r.status/100 != 2 {
					t.Fatalf("%s during the follow-up: %d %s", edit.method, r.status, r.body)
				}
				close(gate)
				r := <-done
				if ct := r.header.Get("Content-Type"); r.status != http.StatusOK || ct != "text/event-stream" {
					t.Fatalf("follow-up: %d %s %s", r.status, ct, r.body)
				}
				e := p.ending(t, r.body)
				msg, code := e.message, e.code
				if e.outcome != "error" || !strings.Contains(msg, "item was "+edit.says+" while the follow-up ran") || strings.Contains(msg, "agent") {
					t.Errorf("error message %q, want one saying the item was %s; stream:\n%s", msg, edit.says, r.body)
				}
				if code != edit.code {
					t.Errorf("error event code %q, want %q; stream:\n%s", code, edit.code, r.body)
				}
				for _, typ := range e.types {
					for _, outcome := range []string{"UNRESOLVED", "unresolved", "CLASSIFIED", "classified", "LOW_CONFIDENCE", "MISUNDERSTOOD", "misunderstood"} {
						if strings.Contains(typ, outcome) {
							t.Errorf("the stream has an outcome (%s) besides the error:\n%s", typ, r.body)
						}
					}
				}
				if p.name == "capture v2" && e.types[len(e.types)-1] != "COMPLETE" {
					t.Errorf("capture v2 stream does not end in COMPLETE: %v", e.types)
				}

				// Telemetry counts an error of the store's code, not an
				// agent that left the capture unresolved.
				fu := ends.of(brainwire.KindFollowUp)
				if len(fu) != 1 || fu[0].Outcome != brainwire.OutcomeError || fu[0].ErrorType != edit.code || fu[0].InboxItemID != "" {
					t.Errorf("follow-up results %+v, want one error of type %s", fu, edit.code)
				}

				// Nothing was filed twice: what the person did stands alone.
				items := h.inbox(testUser)
				if edit.method == "DELETE" {
					if len(items) != 0 {
						t.Fatalf("inbox after the delete %+v", items)
					}
					return
				}
				if len(items) != 1 || items[0].ID != itemID || items[0].Status != brainwire.StatusClassified ||
					items[0].ClassificationMeta.Bucket != "Ideas" || items[0].ClassificationMeta.ClassifiedBy != server.ClassifiedByUser ||
					items[0].FollowUpRounds != 0 || items[0].FollowUpClaim != nil {
					t.Fatalf("inbox %+v", items)
				}
				for _, b := range brainwire.Buckets {
					_, err := h.store.GetBucketRecord(context.Background(), testUser, b, items[0].FiledRecordID)
					if found := err == nil; found != (b == "Ideas") {
						t.Errorf("%s record with the item's record id: %v", b, err)
					}
				}
			})
		}
	}
}
