package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
)

// badTexts are texts a hostile or broken client sends: none may be stored.
var badTexts = []struct {
	name string
	json string // the JSON string literal as it goes on the wire
	want string
}{
	{"invalid UTF-8", "\"Call mom \xff\xfe about it\"", "not valid UTF-8"},
	{"truncated UTF-8 sequence", "\"Caf\xc3\"", "not valid UTF-8"},
	{"lone surrogate escape", `"Call mom \ud800 today"`, "U+FFFD"},
	{"NUL", `"Call mom\u0000 today"`, "control character U+0000"},
	{"bell", `"Call mom \u0007"`, "control character U+0007"},
	{"escape sequence", `"\u001b[31mred"`, "control character U+001B"},
	{"DEL", `"Call mom \u007f"`, "control character U+007F"},
	{"C1 control", `"Call mom \u0085 today"`, "control character U+0085"},
	{"zero-width only", `"\u200b\u200c\u200d"`, "no visible characters"},
	{"byte order mark and joiners", `"\ufeff\u2060\u200d"`, "no visible characters"},
	{"combining marks only", `"\u0301\u0308"`, "no visible characters"},
	{"Hangul filler", `"\u3164\u3164"`, "no visible characters"},
	{"halfwidth Hangul filler", `"\uffa0"`, "no visible characters"},
	{"Hangul choseong filler", `"\u115f"`, "no visible characters"},
	{"Hangul jungseong filler", `"\u1160"`, "no visible characters"},
	{"blank Braille pattern", `"\u2800 \u2800"`, "no visible characters"},
	{"zero-width space", `"\u200b"`, "no visible characters"},
	{"zero-width non-joiner", `"\u200c"`, "no visible characters"},
	{"zero-width joiner", `"\u200d"`, "no visible characters"},
	{"word joiner", `"\u2060"`, "no visible characters"},
	{"byte order mark", `"\ufeff"`, "no visible characters"},
	{"fillers, format characters and spaces", `" \u3164\u200b\u2800\u00a0\ufeff\u115f\u1160\uffa0\t"`, "no visible characters"},
}

func TestBadTextIsRefusedAndNothingStored(t *testing.T) {
	// No upstream call is scripted: any call would fail the test.
	h := newHarness(t, nil)
	h.file(testUser, "m1", brainwire.StatusMisunderstood, "", fixedNow)
	for _, c := range badTexts {
		// Every route a capture's text comes in by: capture-v2, AG-UI 1.0
		// and v1, a new capture and the answer to a question on each.
		for _, route := range []struct{ name, path, body string }{
			{"capture", "/api/capture", `{"text":` + c.json + `}`},
			{"follow-up", "/api/capture/follow-up", `{"inbox_item_id":"m1","follow_up_round":1,"follow_up_text":` + c.json + `}`},
			{"agui", "/api/agui", `{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":` + c.json + `}]}`},
			{"agui-follow-up", "/api/agui", `{"threadId":"t","runId":"r","state":{"capture":{"outcome":"misunderstood","inboxItemId":"m1","followUpRound":0}},` +
				`"messages":[{"id":"u1","role":"user","content":` + c.json + `}]}`},
			{"v1", "/api/ag-ui", `{"messages":[{"id":"u1","role":"user","content":` + c.json + `}]}`},
			{"v1-follow-up", "/api/ag-ui/follow-up", `{"inbox_item_id":"m1","follow_up_round":1,"follow_up_text":` + c.json + `}`},
		} {
			t.Run(route.name+"/"+c.name, func(t *testing.T) {
				r := h.do("POST", route.path, testKey, "bearer", "application/json", route.body)
				want := c.want
				if strings.HasPrefix(route.name, "agui") && want == "not valid UTF-8" {
					// RunAgentInput is decoded whole, which makes bad
					// bytes U+FFFD before the text is checked.
					want = "U+FFFD"
				}
				if r.status != http.StatusBadRequest || !strings.Contains(r.detail, want) {
					t.Fatalf("got %d %s, want 400 with %q", r.status, r.body, want)
				}
			})
		}
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Errorf("%d upstream calls for refused text", n)
	}
	items := h.inbox(testUser)
	if len(items) != 1 || items[0].ID != "m1" || items[0].FollowUpRounds != 0 {
		t.Errorf("inbox after refused captures: %+v", items)
	}
}

// Text with tabs, line breaks, emoji, other scripts and zero-width joiners
// inside visible text is a person's text: it is accepted as it is.
func TestUnusualButValidTextIsKept(t *testing.T) {
	h := newHarness(t, nil, withSimulator(t))
	for _, text := range []string{
		"Call mom\tabout the\r\nbirthday\non Sunday",
		"Lunch with 李明 🍜 on Sunday 🎉",
		"Family 👩\u200d👩\u200d👧 photo for the album",
		"¿Qué tal? — Ask Zoë about the “garden” plan ✓",
	} {
		frames := h.capture(text)
		if len(frames) != 4 || frames[2].Data["type"] == "ERROR" {
			t.Fatalf("%q: stream:\n%s", text, payloads(frames))
		}
		id := frames[2].Data["value"].(map[string]any)["inboxItemId"].(string)
		var found bool
		for _, it := range h.inbox(testUser) {
			found = found || (it.ID == id && it.RawText == text)
		}
		if !found {
			t.Errorf("%q was not stored as sent", text)
		}
	}
}
