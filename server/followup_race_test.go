package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/server"
)

// misunderstoodItem makes a real misunderstood capture through the
// simulator, so that its agent conversation exists, and returns its id.
func (h *harness) misunderstoodItem() string {
	h.t.Helper()
	frames := h.capture("asdf qwerty zxcv")
	if len(frames) != 4 || frames[2].Data["type"] != "MISUNDERSTOOD" {
		h.t.Fatalf("capture:\n%s", payloads(frames))
	}
	return frames[2].Data["value"].(map[string]any)["inboxItemId"].(string)
}

func followUpBody(itemID, text string, round int) string {
	b, _ := json.Marshal(map[string]any{"inbox_item_id": itemID, "follow_up_text": text, "follow_up_round": round})
	return string(b)
}

// answer is what one racing request got.
type answer struct {
	status int
	body   string
	sse    bool
}

// race sends the requests at once and returns what each got.
func (h *harness) race(method, path string, bodies []string) []answer {
	h.t.Helper()
	out := make([]answer, len(bodies))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, body := range bodies {
		wg.Go(func() {
			<-start
			r := h.send(method, path, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + testKey}}, strings.NewReader(body))
			out[i] = answer{status: r.status, body: r.body, sse: r.header.Get("Content-Type") == "text/event-stream"}
		})
	}
	close(start)
	wg.Wait()
	return out
}

// Concurrent follow-ups of the same round: one runs and refiles the item,
// the others get 409 before any stream starts.
func TestConcurrentFollowUpsRunOnce(t *testing.T) {
	h := newHarness(t, nil, withSimulator(t))
	itemID := h.misunderstoodItem()
	const n = 5
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = followUpBody(itemID, "I meant: call my friend Sam about his birthday party", 1)
	}
	answers := h.race("POST", "/api/capture/follow-up", bodies)
	streams := 0
	for i, a := range answers {
		switch {
		case a.status == http.StatusOK && a.sse:
			streams++
			if !strings.Contains(a.body, `"type":"CLASSIFIED"`) {
				t.Errorf("the follow-up that ran got:\n%s", a.body)
			}
		case a.status == http.StatusConflict && !a.sse:
			if !strings.Contains(a.body, "already being answered") && !strings.Contains(a.body, "expects follow-up round 2") &&
				!strings.Contains(a.body, "not misunderstood") {
				t.Errorf("follow-up %d: 409 %s", i, a.body)
			}
		default:
			t.Errorf("follow-up %d: %d (stream %v) %s", i, a.status, a.sse, a.body)
		}
	}
	if streams != 1 {
		t.Fatalf("%d of %d concurrent follow-ups ran, want 1", streams, n)
	}
	items := h.inbox(testUser)
	if len(items) != 1 || items[0].ID != itemID || items[0].FollowUpRounds != 1 || items[0].Status != brainwire.StatusClassified {
		t.Fatalf("inbox %+v", items)
	}
}

// A follow-up that ends without filing gives its round back: the person
// can answer again.
func TestFailedFollowUpReleasesItsRound(t *testing.T) {
	h := newHarness(t, nil, withSimulator(t))
	itemID := h.misunderstoodItem()
	frames := h.readStream(h.post("/api/capture/follow-up", "application/json", followUpBody(itemID, "I meant the birthday party #fail", 1)))
	if got := payloads(frames); !strings.Contains(got, `"type":"ERROR"`) {
		t.Fatalf("failing follow-up:\n%s", got)
	}
	it, err := h.store.GetInboxItem(context.Background(), testUser, itemID)
	if err != nil || it.FollowUpClaim != nil || it.FollowUpRounds != 0 || it.Status != brainwire.StatusMisunderstood {
		t.Fatalf("item after the failed follow-up: %+v, %v", it, err)
	}
	frames = h.readStream(h.post("/api/capture/follow-up", "application/json", followUpBody(itemID, "I meant: call my friend Sam about his birthday party", 1)))
	if got := payloads(frames); !strings.Contains(got, `"type":"CLASSIFIED"`) {
		t.Fatalf("retried follow-up:\n%s", got)
	}
}

// gatedTools holds file_capture until the test opens the gate.
type gatedTools struct {
	brainwire.ToolSet
	reached chan struct{}
	gate    chan struct{}
}

func (g gatedTools) Call(ctx context.Context, call brainwire.ToolCall) brainwire.ToolResult {
	if call.Name == brainwire.ToolFileCapture {
		g.reached <- struct{}{}
		<-g.gate
	}
	return g.ToolSet.Call(ctx, call)
}

// The person's choice wins over a follow-up in flight: a recategorize while
// the agent works drops the follow-up's claim, and its filing is refused.
func TestRecategorizeDuringAFollowUpWins(t *testing.T) {
	reached, gate := make(chan struct{}, 1), make(chan struct{})
	var gated atomic.Bool
	h := newHarness(t, nil, withSimulator(t), func(c *server.Config) {
		c.WrapTools = func(set brainwire.ToolSet) brainwire.ToolSet {
			if !gated.Load() {
				return set
			}
			return gatedTools{ToolSet: set, reached: reached, gate: gate}
		}
	})
	itemID := h.misunderstoodItem()
	gated.Store(true)

	done := make(chan []frame, 1)
	go func() {
		done <- h.readStream(h.post("/api/capture/follow-up", "application/json", followUpBody(itemID, "I meant: call my friend Sam about his birthday party", 1)))
	}()
	waitFor(t, reached, "the follow-up's file_capture")
	r := h.do("PATCH", "/api/inbox/"+itemID+"/recategorize", testKey, "bearer", "application/json", `{"bucket":"Ideas"}`)
	if r.status != http.StatusOK {
		t.Fatalf("recategorize during the follow-up: %d %s", r.status, r.body)
	}
	close(gate)
	frames := <-done
	t.Logf("the follow-up's stream:\n%s", payloads(frames))
	if got := payloads(frames); strings.Contains(got, `"type":"CLASSIFIED"`) || strings.Contains(got, `"type":"LOW_CONFIDENCE"`) {
		t.Errorf("the follow-up filed over the person's choice:\n%s", got)
	}
	items := h.inbox(testUser)
	if len(items) != 1 || items[0].Status != brainwire.StatusClassified || items[0].ClassificationMeta.Bucket != "Ideas" ||
		items[0].ClassificationMeta.ClassifiedBy != server.ClassifiedByUser || items[0].FollowUpClaim != nil {
		t.Fatalf("inbox %+v", items)
	}
	rec, err := h.store.GetBucketRecord(context.Background(), testUser, "Ideas", items[0].FiledRecordID)
	if err != nil || rec.InboxRecordID != itemID {
		t.Fatalf("Ideas record %+v, %v", rec, err)
	}
	for _, b := range []string{"People", "Projects", "Admin"} {
		if _, err := h.store.GetBucketRecord(context.Background(), testUser, b, items[0].FiledRecordID); brainwire.ErrorCode(err) != brainwire.ENotFound {
			t.Errorf("a %s record with the item's record id: %v", b, err)
		}
	}
}
