package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/server"
)

// TestUnresolvedCaptureIsKeptForAPersonToFile follows a capture the agent
// did not file: the phone's UNRESOLVED names the item kept for it, which
// the inbox lists under its status with the agent's run; only its owner
// reaches it; it cannot be followed up; and a person files it, which is
// recorded as a correction of the run that left it unresolved.
func TestUnresolvedCaptureIsKeptForAPersonToFile(t *testing.T) {
	w := &recorder{}
	h := newHarness(t, nil, withSimulator(t), withObserver(w))
	agent, err := h.server.RefreshAgent(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	frames := h.captureWithRunID("Pay the water bill #no-tool", "run-01")
	if len(frames) != 4 || frames[2].Data["type"] != "UNRESOLVED" {
		t.Fatalf("capture:\n%s", payloads(frames))
	}
	id, _ := frames[2].Data["value"].(map[string]any)["inboxItemId"].(string)
	if id == "" {
		t.Fatalf("UNRESOLVED names no item: %s", frames[2].Raw)
	}

	var item brainwire.InboxItem
	h.getJSON("/api/inbox/"+id, &item)
	run := item.AgentRun
	if item.Status != brainwire.StatusUnresolved || item.RawText != "Pay the water bill #no-tool" || item.Source != brainwire.KindText ||
		item.FiledRecordID != "" || item.UpstreamThreadID == "" || item.ClassificationMeta == nil || item.ClassificationMeta.Bucket != "" {
		t.Fatalf("kept item %+v", item)
	}
	if run == nil || run.RunID != "run-01" || run.Outcome != brainwire.OutcomeUnresolved || run.Bucket != "" || run.AgentVersion != agent.Version ||
		run.TraceID != "0af7651916cd43dd8448eb211c80319c" || run.SpanID != "b7ad6b7169203301" {
		t.Fatalf("kept item's agent run %+v", run)
	}
	var page struct{ Items []brainwire.InboxItem }
	h.getJSON("/api/inbox?status=unresolved", &page)
	if len(page.Items) != 1 || page.Items[0].ID != id {
		t.Fatalf("unresolved items %+v", page.Items)
	}

	// Another user's, a bad bucket and follow-ups change nothing.
	for _, c := range []struct {
		method, path, key, body string
		status                  int
	}{
		{"GET", "/api/inbox/" + id, otherKey, "", http.StatusNotFound},
		{"PATCH", "/api/inbox/" + id + "/recategorize", testKey, `{"bucket":"Bills"}`, http.StatusBadRequest},
		{"POST", "/api/capture/follow-up", testKey, `{"inbox_item_id":"` + id + `","follow_up_text":"the water bill","follow_up_round":1}`, http.StatusConflict},
		{"POST", "/api/ag-ui/follow-up", testKey, `{"inbox_item_id":"` + id + `","follow_up_text":"the water bill"}`, http.StatusConflict},
	} {
		if r := h.do(c.method, c.path, c.key, "bearer", "application/json", c.body); r.status != c.status {
			t.Errorf("%s %s as %.5s: %d %s, want %d", c.method, c.path, c.key, r.status, r.body, c.status)
		}
	}
	var same brainwire.InboxItem
	h.getJSON("/api/inbox/"+id, &same)
	if same.Status != brainwire.StatusUnresolved || same.UpdatedAt != item.UpdatedAt || same.FollowUpClaim != nil {
		t.Fatalf("refused requests changed the item: %+v", same)
	}
	if _, corr := w.seen(); len(corr) != 0 {
		t.Fatalf("refused requests made corrections %+v", corr)
	}

	r := h.do("PATCH", "/api/inbox/"+id+"/recategorize", testKey, "bearer", "application/json", `{"bucket":"Admin"}`)
	if r.status != http.StatusOK {
		t.Fatalf("recategorize: %d %s", r.status, r.body)
	}
	var filed brainwire.InboxItem
	if err := json.Unmarshal([]byte(r.body), &filed); err != nil {
		t.Fatal(err)
	}
	if filed.Status != brainwire.StatusClassified || filed.ClassificationMeta.Bucket != "Admin" ||
		filed.ClassificationMeta.ClassifiedBy != server.ClassifiedByUser || filed.AgentRun == nil || *filed.AgentRun != *run {
		t.Fatalf("filed item %+v", filed)
	}
	rec, err := h.store.GetBucketRecord(context.Background(), testUser, "Admin", filed.FiledRecordID)
	if err != nil || rec.InboxRecordID != id {
		t.Fatalf("bucket record %+v, %v", rec, err)
	}
	_, corr := w.seen()
	if len(corr) != 1 || corr[0].Kind != brainwire.CorrectionRecategorize || corr[0].ItemID != id || corr[0].Run != *run ||
		corr[0].Bucket != "Admin" || corr[0].Agreed() {
		t.Fatalf("corrections %+v, want one of the unresolved run", corr)
	}
	h.getJSON("/api/inbox?status=unresolved", &page)
	if len(page.Items) != 0 {
		t.Fatalf("unresolved items after filing %+v", page.Items)
	}

	// And one deleted: gone, with nothing left behind.
	frames = h.capture("Something else #no-tool")
	other, _ := frames[2].Data["value"].(map[string]any)["inboxItemId"].(string)
	if r := h.do("DELETE", "/api/inbox/"+other, testKey, "bearer", "", ""); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/inbox/"+other, testKey, "bearer", "", ""); r.status != http.StatusNotFound {
		t.Fatalf("deleted item: %d %s", r.status, r.body)
	}
}

// getJSON GETs path with the test key and decodes the 200 answer into v.
func (h *harness) getJSON(path string, v any) {
	h.t.Helper()
	r := h.do("GET", path, testKey, "bearer", "", "")
	if r.status != http.StatusOK {
		h.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		h.t.Fatalf("GET %s: %v", path, err)
	}
}

// refusesUnresolved is the real store, failing to keep unresolved
// captures, as a store that is down would.
type refusesUnresolved struct{ brainwire.Store }

func (s refusesUnresolved) File(ctx context.Context, f brainwire.Filing) (brainwire.InboxItem, error) {
	if f.Status == brainwire.StatusUnresolved {
		return brainwire.InboxItem{}, brainwire.Errorf(brainwire.EUnavailable, "the store is down")
	}
	return s.Store.File(ctx, f)
}

// TestUnresolvedNotKeptIsStillUnresolved: when the store cannot keep an
// unresolved capture, the phone is told UNRESOLVED without an item, as
// before such captures were kept, not an ERROR; the failure is logged.
func TestUnresolvedNotKeptIsStillUnresolved(t *testing.T) {
	var logs bytes.Buffer
	h := newHarness(t, nil, withSimulator(t), func(c *server.Config) {
		c.Store = refusesUnresolved{c.Store}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	frames := h.captureWithRunID("Pay the water bill #no-tool", "run-01")
	want := strings.Join([]string{
		`{"type":"STEP_START","stepName":"Classifying"}`,
		`{"type":"STEP_END","stepName":"Classifying"}`,
		`{"type":"UNRESOLVED","value":{"inboxItemId":""}}`,
		`{"type":"COMPLETE","threadId":"thread-id1","runId":"run-01"}`,
	}, "\n")
	if got := payloads(frames); got != want {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, want)
	}
	if items := h.inbox(testUser); len(items) != 0 {
		t.Fatalf("inbox %+v", items)
	}
	if !strings.Contains(logs.String(), "capture unresolved and not kept in the inbox") || !strings.Contains(logs.String(), "the store is down") {
		t.Errorf("the failure was not logged:\n%s", logs.String())
	}
}
