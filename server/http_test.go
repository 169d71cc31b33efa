package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
)

type reply struct {
	status int
	detail string
	body   string
	header http.Header
}

// do sends a request with key in the header keyHeader names ("bearer",
// "x-api-key" or none).
func (h *harness) do(method, path, key, keyHeader, contentType, body string) reply {
	h.t.Helper()
	hdr := http.Header{}
	if contentType != "" {
		hdr.Set("Content-Type", contentType)
	}
	switch keyHeader {
	case "bearer":
		hdr.Set("Authorization", "Bearer "+key)
	case "x-api-key":
		hdr.Set("X-API-Key", key)
	}
	return h.send(method, path, hdr, strings.NewReader(body))
}

// send sends a request with the headers given and reads the whole answer;
// a request that fails is an error of the test and a zero reply, so that
// send serves goroutines too.
func (h *harness) send(method, path string, hdr http.Header, body io.Reader) reply {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.srv.URL+path, body)
	req.Header = hdr
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var d struct{ Detail string }
	_ = json.Unmarshal(b, &d)
	return reply{status: resp.StatusCode, detail: d.Detail, body: string(b), header: resp.Header}
}

func TestAuth(t *testing.T) {
	h := newHarness(t, []ft.Call{ft.Expect("GET /assistants/asst_test", ft.JSON(200, map[string]any{"id": "asst_test", "object": "assistant"}))})
	routes := []struct{ method, path string }{
		{"POST", "/api/capture"}, {"POST", "/api/capture/voice"}, {"POST", "/api/capture/follow-up"},
		{"POST", "/api/agui"}, {"POST", "/api/ag-ui"}, {"POST", "/api/ag-ui/follow-up"}, {"POST", "/api/ag-ui/respond"}, {"POST", "/api/voice-capture"},
		{"GET", "/api/inbox"}, {"GET", "/api/inbox/x"}, {"DELETE", "/api/inbox/x"}, {"PATCH", "/api/inbox/x/recategorize"},
	}
	for _, rt := range routes {
		for name, c := range map[string]struct{ key, header string }{
			"no key":            {"", ""},
			"wrong bearer":      {"wrong-key-0123456789abcdef", "bearer"},
			"wrong x-api-key":   {"wrong-key-0123456789abcdef", "x-api-key"},
			"prefix of the key": {testKey[:10], "bearer"},
			"key plus suffix":   {testKey + "x", "bearer"},
		} {
			r := h.do(rt.method, rt.path, c.key, c.header, "application/json", `{"text":"x"}`)
			if r.status != http.StatusUnauthorized || r.detail != "Invalid or missing API key" {
				t.Errorf("%s %s with %s: %d %s", rt.method, rt.path, name, r.status, r.body)
			}
		}
		// A capture route takes only POST.
		if r := h.do("GET", rt.path, testKey, "bearer", "", ""); rt.method == "POST" && r.status != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: %d %s", rt.path, r.status, r.body)
		}
	}
	if r := h.do("GET", "/nope", "", "", "", ""); r.status != http.StatusNotFound || r.detail == "" {
		t.Errorf("unknown route: %d %s", r.status, r.body)
	}
	if n := len(h.up.Find("POST /threads/runs")); n != 0 {
		t.Errorf("%d agent runs for refused requests", n)
	}
	// Both headers are accepted.
	if r := h.do("GET", "/api/inbox", testKey, "x-api-key", "", ""); r.status != http.StatusOK {
		t.Errorf("X-API-Key: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/api/inbox", testKey, "bearer", "", ""); r.status != http.StatusOK {
		t.Errorf("Bearer: %d %s", r.status, r.body)
	}
	// Health is open, checks the agent once and reuses the answer.
	for range 2 {
		if r := h.do("GET", "/health", "", "", "", ""); r.status != http.StatusOK ||
			!strings.Contains(r.body, `"status":"ok"`) || !strings.Contains(r.body, `"agent":{"configured":true,"kind":"azure.ai.agents","reachable":true}`) {
			t.Errorf("health: %d %s", r.status, r.body)
		}
	}
}

// A request carrying two API keys that disagree is refused, whichever
// header names which user: the server never picks one of them. The same
// key in both headers is one credential.
func TestAuthRefusesKeysThatDisagree(t *testing.T) {
	h := newHarness(t, nil, withSimulator(t))
	if r := h.do("POST", "/api/capture", otherKey, "x-api-key", "application/json", `{"text":"bob's capture"}`); r.status != http.StatusOK {
		t.Fatalf("bob's capture: %d %s", r.status, r.body)
	}
	const bad = "wrong-key-0123456789abcdef"
	for name, c := range map[string]struct {
		headers http.Header
		detail  string
	}{
		"bob's x-api-key, alice's bearer": {http.Header{"X-Api-Key": {otherKey}, "Authorization": {"Bearer " + testKey}}, "different API keys"},
		"alice's x-api-key, bob's bearer": {http.Header{"X-Api-Key": {testKey}, "Authorization": {"Bearer " + otherKey}}, "different API keys"},
		"valid x-api-key, bad bearer":     {http.Header{"X-Api-Key": {otherKey}, "Authorization": {"Bearer " + bad}}, "different API keys"},
		"bad x-api-key, valid bearer":     {http.Header{"X-Api-Key": {bad}, "Authorization": {"Bearer " + otherKey}}, "different API keys"},
		"two x-api-keys":                  {http.Header{"X-Api-Key": {otherKey, testKey}}, "different API keys"},
		"the same bad key twice":          {http.Header{"X-Api-Key": {bad}, "Authorization": {"Bearer " + bad}}, "Invalid or missing API key"},
	} {
		r := h.send("GET", "/api/inbox", c.headers, nil)
		if r.status != http.StatusUnauthorized || !strings.Contains(r.detail, c.detail) || strings.Contains(r.body, "bob's capture") {
			t.Errorf("%s: got %d %s, want 401 %q", name, r.status, r.body, c.detail)
		}
	}
	r := h.send("GET", "/api/inbox", http.Header{"X-Api-Key": {otherKey}, "Authorization": {"Bearer " + otherKey}}, nil)
	if r.status != http.StatusOK || !strings.Contains(r.body, "bob's capture") {
		t.Errorf("the same key in both headers: %d %s", r.status, r.body)
	}
}

func TestHealthDegradedWhenTheAgentIsUnknown(t *testing.T) {
	h := newHarness(t, []ft.Call{ft.Expect("GET /assistants/asst_test", ft.Error(404, "not_found", "No assistant found with id 'asst_test'."))})
	r := h.do("GET", "/health", "", "", "", "")
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `"status":"degraded"`) ||
		!strings.Contains(r.body, `"reachable":false`) || strings.Contains(r.body, "asst_test") {
		t.Fatalf("health: %d %s", r.status, r.body)
	}
}

// refusal is a request a route refuses, and how.
type refusal struct {
	name, path, contentType, body string
	status                        int
	detail                        string
}

// TestBadRequestsAreRefusedBeforeStreaming: on every protocol's routes a
// malformed, oversized or invalid request is answered with a status and a
// detail that says what is wrong, before any stream starts: no agent runs
// and nothing is filed or moved.
func TestBadRequestsAreRefusedBeforeStreaming(t *testing.T) {
	// No upstream call is scripted: any call would fail the test.
	h := newHarness(t, nil, withMaxAudio(1024), withTranscriber(stubTranscriber{"x"}))
	h.file(testUser, "p1", brainwire.StatusPending, "Ideas", fixedNow)
	h.file("bob", "b1", brainwire.StatusPending, "Ideas", fixedNow)
	h.file(testUser, "c1", brainwire.StatusClassified, "Ideas", fixedNow)
	h.file(testUser, "m1", brainwire.StatusMisunderstood, "", fixedNow)
	h.file("bob", "bm1", brainwire.StatusMisunderstood, "", fixedNow)
	spent := h.file(testUser, "m3", brainwire.StatusMisunderstood, "", fixedNow)
	if _, err := h.store.File(context.Background(), brainwire.Filing{UserID: testUser, InboxItemID: spent.ID, NewInboxID: "x", NewRecordID: "y",
		RawText: "?", Source: brainwire.KindText, Status: brainwire.StatusMisunderstood,
		Classification: brainwire.Classification{ClassifiedAt: fixedNow}, FollowUpRound: 3, Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	before := h.inbox(testUser)
	const js = "application/json"
	aguiAudio := func(b64, mime string) string {
		return runInput([]map[string]any{{"type": "audio", "source": map[string]string{"type": "data", "value": b64, "mimeType": mime}}}, `{}`, `{}`)
	}
	cases := []refusal{
		{"malformed JSON", "/api/capture", js, `{"text":`, 400, "malformed JSON body"},
		{"not an object", "/api/capture", js, `["x"]`, 400, "malformed JSON body"},
		{"unknown field", "/api/capture", js, `{"txt":"hello"}`, 400, "unknown field"},
		{"two values", "/api/capture", js, `{"text":"a"}{"text":"b"}`, 400, "more than one JSON value"},
		{"empty text", "/api/capture", js, `{"text":"   "}`, 400, "text is required"},
		{"text too long", "/api/capture", js, `{"text":"` + strings.Repeat("é", 10001) + `"}`, 413, "the limit is 10000"},
		{"body too large", "/api/capture", js, `{"text":"` + strings.Repeat("a", 70<<10) + `"}`, 413, "request body is over"},
		{"wrong content type", "/api/capture", "text/plain", `{"text":"x"}`, 415, "Content-Type must be"},
		{"no content type", "/api/capture", "", `{"text":"x"}`, 415, "Content-Type must be"},
		{"follow-up on an unknown item", "/api/capture/follow-up", js, `{"inbox_item_id":"nope","follow_up_text":"x","follow_up_round":1}`, 404, ""},
		{"follow-up on another user's item", "/api/capture/follow-up", js, `{"inbox_item_id":"bm1","follow_up_text":"x","follow_up_round":1}`, 404, ""},
		{"follow-up on a filed item", "/api/capture/follow-up", js, `{"inbox_item_id":"c1","follow_up_text":"x","follow_up_round":1}`, 409, "not misunderstood"},
		{"follow-up without text", "/api/capture/follow-up", js, `{"inbox_item_id":"m1","follow_up_text":"","follow_up_round":1}`, 400, "follow_up_text"},
		{"follow-up of a round not next", "/api/capture/follow-up", js, `{"inbox_item_id":"m1","follow_up_text":"x","follow_up_round":2}`, 409, "expects follow-up round 1, not 2"},
		{"follow-up past the last round", "/api/capture/follow-up", js, `{"inbox_item_id":"m3","follow_up_text":"x","follow_up_round":3}`, 409, "all 3 follow-up rounds"},
		{"follow-up round 0", "/api/capture/follow-up", js, `{"inbox_item_id":"m1","follow_up_text":"x","follow_up_round":0}`, 400, "follow_up_round"},
		{"follow-up round 4", "/api/capture/follow-up", js, `{"inbox_item_id":"m1","follow_up_text":"x","follow_up_round":4}`, 400, "follow_up_round"},
		{"follow-up without an item", "/api/capture/follow-up", js, `{"inbox_item_id":"","follow_up_text":"x","follow_up_round":1}`, 400, "inbox_item_id"},
		{"follow-up malformed", "/api/capture/follow-up", js, `{"inbox_item_id":"m1","follow_up_text":"x"`, 400, "malformed"},
		{"run id too long", "/api/capture", js, `{"text":"x","run_id":"` + strings.Repeat("r", 129) + `"}`, 400, "run_id"},

		{"malformed JSON", "/api/agui", js, `{"threadId":`, 400, "malformed RunAgentInput"},
		{"no threadId", "/api/agui", js, `{"runId":"r","messages":[{"role":"user","content":"x"}]}`, 400, "threadId is required"},
		{"no user message", "/api/agui", js, `{"threadId":"t","runId":"r","messages":[]}`, 400, "no user message"},
		{"empty text", "/api/agui", js, runInput(" ", `{}`, `{}`), 400, "no text"},
		{"text too long", "/api/agui", js, runInput(strings.Repeat("é", 10001), `{}`, `{}`), 413, "the limit is 10000"},
		{"body too large", "/api/agui", js, runInput(strings.Repeat("a", 4<<20), `{}`, `{}`), 413, "request body is over"},
		{"wrong content type", "/api/agui", "text/plain", runInput("x", `{}`, `{}`), 415, "Content-Type must be"},
		{"audio by URL", "/api/agui", js, runInput([]map[string]any{{"type": "audio", "source": map[string]string{"type": "url", "value": "http://127.0.0.1/"}}}, `{}`, `{}`), 400, "inline"},
		{"audio too large", "/api/agui", js, aguiAudio(base64.StdEncoding.EncodeToString(make([]byte, 2048)), "audio/wav"), 413, "over 1024 bytes"},
		{"audio of an unknown format", "/api/agui", js, aguiAudio("AAAA", "text/plain"), 400, "unsupported audio format"},
		{"audio that is not audio", "/api/agui", js, aguiAudio(base64.StdEncoding.EncodeToString([]byte("\x7fELF\x02\x01\x01\x00")), "audio/wav"), 415, "not WAV audio"},
		{"follow-up on an unknown item", "/api/agui", js, runInput("x", `{"capture":{"outcome":"misunderstood","inboxItemId":"nope","followUpRound":0}}`, `{}`), 404, ""},
		{"follow-up past the last round", "/api/agui", js, runInput("x", `{"capture":{"outcome":"misunderstood","inboxItemId":"m1","followUpRound":3}}`, `{}`), 409, "all 3 follow-up rounds"},

		{"malformed JSON", "/api/ag-ui", js, `{"messages":`, 400, "malformed JSON body"},
		{"no user message", "/api/ag-ui", js, `{"messages":[{"role":"assistant","content":"hi"}]}`, 400, "no user message"},
		{"content not a string", "/api/ag-ui", js, `{"messages":[{"role":"user","content":[1]}]}`, 400, "malformed JSON body"},
		{"text too long", "/api/ag-ui", js, legacyBody(strings.Repeat("é", 10001)), 413, "the limit is 10000"},
		{"body too large", "/api/ag-ui", js, legacyBody(strings.Repeat("a", 70<<10)), 413, "request body is over"},
		{"wrong content type", "/api/ag-ui", "text/plain", legacyBody("x"), 415, "Content-Type must be"},
		{"no item", "/api/ag-ui/follow-up", js, `{"follow_up_text":"x"}`, 400, "inbox_item_id is required"},
		{"unknown item", "/api/ag-ui/follow-up", js, `{"inbox_item_id":"nope","follow_up_text":"x"}`, 404, ""},
		{"item not misunderstood", "/api/ag-ui/follow-up", js, `{"inbox_item_id":"p1","follow_up_text":"x"}`, 409, "not misunderstood"},
		{"round out of range", "/api/ag-ui/follow-up", js, `{"inbox_item_id":"p1","follow_up_text":"x","follow_up_round":9}`, 400, "follow_up_round"},
		{"no item", "/api/ag-ui/respond", js, `{"thread_id":"t","response":"People"}`, 400, "inbox_item_id is required"},
		{"not a bucket", "/api/ag-ui/respond", js, `{"thread_id":"t","response":"Misc","inbox_item_id":"p1"}`, 400, "response must be one of"},
		{"unknown item", "/api/ag-ui/respond", js, `{"thread_id":"t","response":"People","inbox_item_id":"nope"}`, 404, ""},
		{"another user's item", "/api/ag-ui/respond", js, `{"thread_id":"t","response":"People","inbox_item_id":"b1"}`, 404, ""},
		{"not multipart", "/api/voice-capture", js, `{}`, 415, "multipart/form-data"},
	}
	// A client's thread id is printable characters without spaces, on
	// every route that takes one (each bad one as JSON escapes it).
	for _, bad := range []string{" ", `\u2028`, `\u2029`, `\u0085`, `\u202e`, `\u200b`, `\u00a0`, `\u3000`, `\t`, `\u007f`, `\ufeff`, `\n`} {
		id := "a" + bad + "b"
		cases = append(cases,
			refusal{"thread id " + id, "/api/capture", js, `{"text":"x","thread_id":"` + id + `"}`, 400, "thread_id must be at most 128 printable characters without spaces"},
			refusal{"thread id " + id, "/api/agui", js, strings.Replace(runInput("x", `{}`, `{}`), `"t-agui"`, `"`+id+`"`, 1), 400, "thread_id"},
			refusal{"thread id " + id, "/api/ag-ui", js, `{"messages":[{"role":"user","content":"x"}],"thread_id":"` + id + `"}`, 400, "thread_id"},
			refusal{"thread id " + id, "/api/ag-ui/respond", js, `{"thread_id":"` + id + `","response":"People","inbox_item_id":"p1"}`, 400, "thread_id"},
		)
	}
	for _, c := range cases {
		t.Run(c.path+"/"+c.name, func(t *testing.T) {
			r := h.do("POST", c.path, testKey, "bearer", c.contentType, c.body)
			if r.status != c.status || !strings.Contains(r.detail, c.detail) {
				t.Fatalf("got %d %s, want %d with %q", r.status, r.body, c.status, c.detail)
			}
		})
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls for rejected requests", n)
	}
	if after := h.inbox(testUser); !reflect.DeepEqual(after, before) {
		t.Fatalf("the inbox changed:\n%+v\nbefore:\n%+v", after, before)
	}
}

// TestNonCanonicalPathsAreNotRedirected: a path with "//", "." or ".."
// segments is a path like any other (404 when no route has it), never a
// redirect to its cleaned form, which a client could follow with the same
// method onto another item.
func TestNonCanonicalPathsAreNotRedirected(t *testing.T) {
	h := newHarness(t, nil)
	h.file(testUser, "y", brainwire.StatusClassified, brainwire.BucketIdeas, fixedNow)
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/api/inbox/x/../y"}, {"GET", "/api/inbox/./y"}, {"PATCH", "/api/inbox//recategorize"},
		{"PATCH", "/api/inbox/../recategorize"}, {"GET", "//api/inbox"}, {"GET", "/health/"},
	} {
		r := h.do(c.method, c.path, testKey, "bearer", "application/json", `{"bucket":"People"}`)
		if r.status != http.StatusNotFound || r.detail == "" {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	if it, err := h.store.GetInboxItem(context.Background(), testUser, "y"); err != nil || it.ClassificationMeta.Bucket != brainwire.BucketIdeas {
		t.Fatalf("item y: %+v, %v", it, err)
	}
}

// file stores an item directly, as a finished capture would have.
func (h *harness) file(user, id, status, bucket string, at time.Time) brainwire.InboxItem {
	h.t.Helper()
	item, err := h.store.File(context.Background(), brainwire.Filing{
		UserID: user, NewInboxID: id, NewRecordID: "rec-" + id, RawText: "text of " + id, Title: id,
		Source: brainwire.KindText, Status: status,
		Classification:   brainwire.Classification{Bucket: bucket, Confidence: 0.9, ClassifiedBy: "Classifier", ClassifiedAt: at},
		UpstreamThreadID: "thread_" + id, Now: at,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return item
}

func TestInboxAPI(t *testing.T) {
	h := newHarness(t, nil)
	for i, id := range []string{"a1", "a2", "a3"} {
		h.file(testUser, id, "classified", "People", fixedNow.Add(time.Duration(i)*time.Minute))
	}
	h.file(testUser, "m1", "misunderstood", "", fixedNow.Add(10*time.Minute))
	h.file("bob", "b1", "classified", "Ideas", fixedNow)

	var page struct {
		Items      []brainwire.InboxItem
		NextCursor string
	}
	r := h.do("GET", "/api/inbox?limit=2", testKey, "bearer", "", "")
	if err := json.Unmarshal([]byte(r.body), &page); err != nil || r.status != 200 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if len(page.Items) != 2 || page.Items[0].ID != "m1" || page.Items[1].ID != "a3" || page.NextCursor == "" {
		t.Fatalf("first page: %s", r.body)
	}
	r = h.do("GET", "/api/inbox?limit=2&cursor="+page.NextCursor, testKey, "bearer", "", "")
	page.NextCursor = ""
	_ = json.Unmarshal([]byte(r.body), &page)
	if len(page.Items) != 2 || page.Items[0].ID != "a2" || page.Items[1].ID != "a1" || page.NextCursor != "" {
		t.Fatalf("second page: %s", r.body)
	}
	r = h.do("GET", "/api/inbox?status=misunderstood", testKey, "bearer", "", "")
	_ = json.Unmarshal([]byte(r.body), &page)
	if len(page.Items) != 1 || page.Items[0].ID != "m1" {
		t.Fatalf("filtered: %s", r.body)
	}
	for _, bad := range []string{"?status=weird", "?limit=0", "?limit=101", "?limit=x"} {
		if r := h.do("GET", "/api/inbox"+bad, testKey, "bearer", "", ""); r.status != 400 {
			t.Errorf("list %s: %d %s", bad, r.status, r.body)
		}
	}
	if r := h.do("GET", "/api/inbox?cursor=garbage!!", testKey, "bearer", "", ""); r.status != 400 {
		t.Errorf("bad cursor: %d %s", r.status, r.body)
	}

	// Get: own item, other user's item, unknown, bad id.
	if r := h.do("GET", "/api/inbox/a1", testKey, "bearer", "", ""); r.status != 200 || !strings.Contains(r.body, `"rawText":"text of a1"`) {
		t.Errorf("get: %d %s", r.status, r.body)
	}
	for path, want := range map[string]int{"/api/inbox/b1": 404, "/api/inbox/nope": 404, "/api/inbox/" + strings.Repeat("x", 200): 400} {
		if r := h.do("GET", path, testKey, "bearer", "", ""); r.status != want {
			t.Errorf("get %s: %d %s, want %d", path, r.status, r.body, want)
		}
	}

	// Recategorize: moves the record, records the person as classifier.
	r = h.do("PATCH", "/api/inbox/a1/recategorize", testKey, "bearer", "application/json", `{"bucket":"Projects"}`)
	if r.status != 200 {
		t.Fatalf("recategorize: %d %s", r.status, r.body)
	}
	item, _ := h.store.GetInboxItem(context.Background(), testUser, "a1")
	if item.ClassificationMeta.Bucket != "Projects" || item.ClassificationMeta.ClassifiedBy != "user" {
		t.Fatalf("after recategorize: %+v", item.ClassificationMeta)
	}
	if _, err := h.store.GetBucketRecord(context.Background(), testUser, "Projects", item.FiledRecordID); err != nil {
		t.Fatalf("record not in Projects: %v", err)
	}
	if _, err := h.store.GetBucketRecord(context.Background(), testUser, "People", "rec-a1"); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Fatalf("old People record still there: %v", err)
	}
	for _, c := range []struct{ path, body string }{
		{"/api/inbox/a2/recategorize", `{"bucket":"Misc"}`},
		{"/api/inbox/a2/recategorize", `{"bucket":`},
		{"/api/inbox/a2/recategorize", `{"bucket":"Ideas","x":1}`},
	} {
		if r := h.do("PATCH", c.path, testKey, "bearer", "application/json", c.body); r.status != 400 {
			t.Errorf("recategorize %s: %d %s", c.body, r.status, r.body)
		}
	}
	if r := h.do("PATCH", "/api/inbox/b1/recategorize", testKey, "bearer", "application/json", `{"bucket":"People"}`); r.status != 404 {
		t.Errorf("recategorize other user's: %d %s", r.status, r.body)
	}

	// Delete: removes the bucket record too; other user's item untouched.
	if r := h.do("DELETE", "/api/inbox/a2", testKey, "bearer", "", ""); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if _, err := h.store.GetBucketRecord(context.Background(), testUser, "People", "rec-a2"); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Fatalf("record survived delete: %v", err)
	}
	if r := h.do("DELETE", "/api/inbox/b1", testKey, "bearer", "", ""); r.status != 404 {
		t.Errorf("delete other user's: %d %s", r.status, r.body)
	}
	if _, err := h.store.GetInboxItem(context.Background(), "bob", "b1"); err != nil {
		t.Fatalf("bob's item was touched: %v", err)
	}
	if r := h.do("DELETE", "/api/inbox/a2", testKey, "bearer", "", ""); r.status != 404 {
		t.Errorf("delete twice: %d %s", r.status, r.body)
	}
}

// A client's thread and run ids are held to 128 characters, as the 400
// says, not bytes: 128 two-byte characters are an id like any other.
func TestIDLengthCountsCharacters(t *testing.T) {
	h := newHarness(t, nil, withSimulator(t))
	for _, c := range []struct {
		name, id string
		status   int
	}{
		{"128 ASCII characters", strings.Repeat("r", 128), 200},
		{"128 two-byte characters", strings.Repeat("é", 128), 200},
		{"128 four-byte characters", strings.Repeat("𝄞", 128), 200},
		{"129 ASCII characters", strings.Repeat("r", 129), 400},
		{"129 two-byte characters", strings.Repeat("é", 129), 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, field := range []string{"thread_id", "run_id"} {
				b, _ := json.Marshal(map[string]string{"text": "Call mom about her birthday", field: c.id})
				r := h.do("POST", "/api/capture", testKey, "bearer", "application/json", string(b))
				if r.status != c.status {
					t.Fatalf("%s: %d %s, want %d", field, r.status, r.body, c.status)
				}
				want := `"` + strings.Replace(field, "_id", "Id", 1) + `":"` + c.id + `"`
				if c.status == 200 && !strings.Contains(r.body, want) {
					t.Errorf("%s not echoed in COMPLETE:\n%s", field, r.body)
				}
				if c.status == 400 && !strings.Contains(r.detail, field+" must be at most 128 printable characters") {
					t.Errorf("%s: detail %q", field, r.detail)
				}
			}
		})
	}
}

// Inbox item ids are held to the rule of a client's ids, in characters:
// 128 two-byte characters may name an item (404 when none), a format
// character such as U+202E may not (400), and a follow-up told of such an
// id hears what is wrong with it rather than that it is missing.
func TestInboxItemIDsFollowTheIDRule(t *testing.T) {
	h := newHarness(t, nil, withSimulator(t))
	for _, c := range []struct {
		name, id string
		status   int
	}{
		{"128 two-byte characters", strings.Repeat("é", 128), 404},
		{"129 two-byte characters", strings.Repeat("é", 129), 400},
		{"U+202E (right-to-left override)", "a\u202eb", 400},
		{"U+2028 (line separator)", "a\u2028b", 400},
		{"U+00A0 (no-break space)", "a\u00a0b", 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := "/api/inbox/" + url.PathEscape(c.id)
			if r := h.do("GET", path, testKey, "bearer", "", ""); r.status != c.status {
				t.Errorf("GET the item: %d %s, want %d", r.status, r.body, c.status)
			}
			b, _ := json.Marshal(map[string]any{"inbox_item_id": c.id, "follow_up_text": "Sarah is my sister", "follow_up_round": 1})
			r := h.do("POST", "/api/capture/follow-up", testKey, "bearer", "application/json", string(b))
			if r.status != c.status {
				t.Errorf("follow-up: %d %s, want %d", r.status, r.body, c.status)
			}
			if c.status == 400 && !strings.Contains(r.detail, "inbox_item_id is not an inbox item id") {
				t.Errorf("follow-up: detail %q", r.detail)
			}
		})
	}
}
