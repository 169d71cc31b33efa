package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/agui/aguitest"
	"github.com/brainwire/brainwire/server"
)

// followUpProtocol is one protocol's follow-up route, and how its stream
// says the capture failed.
type followUpProtocol struct {
	name, path string
	body       func(itemID, text string) string
	// failure returns the stream's error event's message and code, and its
	// events' types.
	failure func(t *testing.T, stream string) (msg, code string, types []string)
}

func dataFrames(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, f := range readFrames(t, strings.NewReader(stream)) {
		out = append(out, f.Data)
	}
	return out
}

// failureOf finds the frame of type typ in frames; each frame's type is
// also listed, with a CUSTOM event's name.
func failureOf(frames []map[string]any, typ string) (msg, code string, types []string) {
	for _, f := range frames {
		ft, _ := f["type"].(string)
		if name, ok := f["name"].(string); ok {
			ft += " " + name
		}
		if v, ok := f["value"].(map[string]any); ok {
			if o, ok := v["outcome"].(string); ok {
				ft += " " + o
			}
		}
		types = append(types, ft)
		if f["type"] == typ {
			msg, _ = f["message"].(string)
			code, _ = f["code"].(string)
		}
	}
	return msg, code, types
}

var followUpProtocols = []followUpProtocol{
	{
		name: "capture v2", path: "/api/capture/follow-up",
		body: func(id, text string) string { return followUpBody(id, text, 1) },
		failure: func(t *testing.T, stream string) (string, string, []string) {
			return failureOf(dataFrames(t, stream), "ERROR")
		},
	},
	{
		name: "v1", path: "/api/ag-ui/follow-up",
		body: func(id, text string) string { return followUpBody(id, text, 1) },
		failure: func(t *testing.T, stream string) (string, string, []string) {
			return failureOf(dataFrames(t, stream), "RUN_ERROR")
		},
	},
	{
		name: "AG-UI", path: "/api/agui",
		body: func(id, text string) string {
			return runInput(text, `{"capture":{"outcome":"misunderstood","inboxItemId":"`+id+`","followUpRound":0}}`, `{}`)
		},
		failure: func(t *testing.T, stream string) (string, string, []string) {
			frames, err := aguitest.Frames(stream)
			if err != nil {
				t.Fatal(err)
			}
			if err := aguitest.Verify(frames); err != nil {
				t.Fatalf("not a valid AG-UI stream: %v\n%s", err, stream)
			}
			var evs []map[string]any
			for _, f := range frames {
				var ev map[string]any
				_ = json.Unmarshal([]byte(f), &ev)
				evs = append(evs, ev)
			}
			return failureOf(evs, "RUN_ERROR")
		},
	},
}

// A follow-up whose item a person recategorizes or deletes while the
// agent works files nothing, and its client is told so on every protocol:
// the protocol's error event says the item was changed (or deleted), with
// the store's code, not that the agent failed or left the capture
// unresolved.
func TestFollowUpSupersededByAPersonSaysSo(t *testing.T) {
	for _, p := range followUpProtocols {
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
				itemID := h.misunderstoodItem()
				gated.Store(true)

				done := make(chan reply, 1)
				go func() {
					done <- h.send(http.MethodPost, p.path, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + testKey}},
						strings.NewReader(p.body(itemID, "I meant: call my friend Sam about his birthday party")))
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
				msg, code, types := p.failure(t, r.body)
				if !strings.Contains(msg, "item was "+edit.says+" while the follow-up ran") || strings.Contains(msg, "agent") {
					t.Errorf("error message %q, want one saying the item was %s; stream:\n%s", msg, edit.says, r.body)
				}
				if code != edit.code {
					t.Errorf("error event code %q, want %q; stream:\n%s", code, edit.code, r.body)
				}
				for _, typ := range types {
					for _, outcome := range []string{"UNRESOLVED", "unresolved", "CLASSIFIED", "classified", "LOW_CONFIDENCE", "MISUNDERSTOOD", "misunderstood"} {
						if strings.Contains(typ, outcome) {
							t.Errorf("the stream has an outcome (%s) besides the error:\n%s", typ, r.body)
						}
					}
				}
				if p.name == "capture v2" && (len(types) == 0 || types[len(types)-1] != "COMPLETE") {
					t.Errorf("capture v2 stream does not end in COMPLETE: %v", types)
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
