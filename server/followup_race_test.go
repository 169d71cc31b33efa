package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/brainwire/brainwire"
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

// A follow-up that files nothing (its run fails, or the agent files
// nothing) keeps no item of its own and leaves the misunderstood item as
// it was, its round given back: the person can answer again.
func TestAFollowUpThatFilesNothingLeavesTheItem(t *testing.T) {
	for text, outcome := range map[string]string{
		"I meant the birthday party #fail": `"type":"ERROR"`,
		"never mind #no-tool":              `{"type":"UNRESOLVED","value":{"inboxItemId":""}}`,
	} {
		t.Run(outcome, func(t *testing.T) {
			h := newHarness(t, nil, withSimulator(t))
			itemID := h.misunderstoodItem()
			before := h.inbox(testUser)[0]
			if got := payloads(h.readStream(h.post("/api/capture/follow-up", "application/json", followUpBody(itemID, text, 1)))); !strings.Contains(got, outcome) {
				t.Fatalf("follow-up:\n%s\nwant %s", got, outcome)
			}
			items := h.inbox(testUser)
			if len(items) != 1 || items[0].Status != brainwire.StatusMisunderstood || items[0].FollowUpRounds != 0 || items[0].FollowUpClaim != nil ||
				items[0].RawText != before.RawText || *items[0].AgentRun != *before.AgentRun || !items[0].UpdatedAt.Equal(before.UpdatedAt) {
				t.Fatalf("inbox after the follow-up %+v, was %+v", items, before)
			}
			frames := h.readStream(h.post("/api/capture/follow-up", "application/json", followUpBody(itemID, "I meant: call my friend Sam about his birthday party", 1)))
			if got := payloads(frames); !strings.Contains(got, `"type":"CLASSIFIED"`) {
				t.Fatalf("the answer again:\n%s", got)
			}
		})
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
