package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/internal/testaudio"
	"github.com/brainwire/brainwire/server"
)

// keyed is one answer to a request sent with an Idempotency-Key.
type keyed struct {
	status     int
	body       string
	replayed   string
	retryAfter string
}

// sendKeyed posts body to path as user's key, with the Idempotency-Key
// header set to key (raw, as it goes on the wire) unless it is "".
func (h *harness) sendKeyed(apiKey, path, contentType, body, key string) keyed {
	h.t.Helper()
	hdr := http.Header{"Content-Type": {contentType}, "Authorization": {"Bearer " + apiKey}}
	if key != "" {
		hdr["Idempotency-Key"] = []string{key}
	}
	r := h.send(http.MethodPost, path, hdr, strings.NewReader(body))
	return keyed{status: r.status, body: r.body, replayed: r.header.Get("Idempotent-Replayed"), retryAfter: r.header.Get("Retry-After")}
}

var itemIDPattern = regexp.MustCompile(`"inboxItemId":"([^"]+)"`)

// itemID is the inbox item a stream's outcome names, in any protocol.
func itemID(t *testing.T, body string) string {
	t.Helper()
	m := itemIDPattern.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no inbox item in the stream:\n%s", body)
	}
	return m[1]
}

// Every capture route of every protocol: a repeat of a filed capture with
// the same key replays it (the same item, marked replayed) without an
// agent run or a second filing, and the key with another request is 422.
func TestIdempotentCapturesReplayOnEveryRoute(t *testing.T) {
	var runs atomic.Int64
	obs := &recorder{}
	_, tr := newTranscriptionAPI(t, "Call mom about her birthday on Sunday.")
	h := newHarness(t, nil, withCountedSimulator(t, &runs), withTranscriber(tr), withObserver(obs))
	misunderstood := h.misunderstoodItem()
	legacyMisunderstood := h.misunderstoodItem()
	audio := testaudio.WAV(t, "Call mom about her birthday on Sunday")
	other := testaudio.WAV(t, "Buy milk")
	voice := func(a []byte) func() (string, string) {
		// A fresh multipart body, boundary and all, as a phone's retry
		// sends it.
		return func() (string, string) { return voiceBody(t, "note.wav", "audio/wav", a) }
	}
	jsonBody := func(s string) func() (string, string) {
		return func() (string, string) { return "application/json", s }
	}
	legacy := func(text string) string {
		b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}})
		return string(b)
	}
	cases := []struct {
		name, path   string
		body, other  func() (string, string)
		sameBytes    bool // the replay is byte for byte the first stream
		wantOutcomes string
	}{
		{"capture v2 text", "/api/capture", jsonBody(`{"text":"Call Sarah about the offsite"}`), jsonBody(`{"text":"Buy milk"}`), true, "CLASSIFIED"},
		{"capture v2 voice", "/api/capture/voice", voice(audio), voice(other), true, "CLASSIFIED"},
		{"capture v2 voice on /api/capture", "/api/capture", voice(audio), voice(other), true, "CLASSIFIED"},
		{"capture v2 follow-up", "/api/capture/follow-up",
			jsonBody(followUpBody(misunderstood, "I meant: call my friend Sam about his birthday party", 1)),
			jsonBody(followUpBody(misunderstood, "I meant: the garden", 1)), true, "CLASSIFIED"},
		{"AG-UI", "/api/agui", jsonBody(runInput("Call Sarah about the offsite", `{}`, `{}`)),
			jsonBody(runInput("Buy milk", `{}`, `{}`)), false, "brainwire.outcome"},
		{"v1", "/api/ag-ui", jsonBody(legacy("Call Sarah about the offsite")), jsonBody(legacy("Buy milk")), true, "CLASSIFIED"},
		{"v1 voice", "/api/voice-capture", voice(audio), voice(other), true, "CLASSIFIED"},
		{"v1 follow-up", "/api/ag-ui/follow-up",
			jsonBody(followUpBody(legacyMisunderstood, "I meant: call my friend Sam about his birthday party", 1)),
			jsonBody(followUpBody(legacyMisunderstood, "I meant: the garden", 1)), true, "CLASSIFIED"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := fmt.Sprintf(`"capture-%d"`, i)
			items, ran, replayed := len(h.inbox(testUser)), runs.Load(), obs.replays()
			ct, body := c.body()
			first := h.sendKeyed(testKey, c.path, ct, body, key)
			if first.status != http.StatusOK || first.replayed != "" || !strings.Contains(first.body, c.wantOutcomes) {
				t.Fatalf("first request: %d (replayed %q)\n%s", first.status, first.replayed, first.body)
			}
			if runs.Load() != ran+1 {
				t.Fatalf("the first request started %d agent runs", runs.Load()-ran)
			}
			id := itemID(t, first.body)
			started := obs.started()

			for range 2 {
				ct, body := c.body()
				again := h.sendKeyed(testKey, c.path, ct, body, key)
				if again.status != http.StatusOK || again.replayed != "true" {
					t.Fatalf("repeat: %d (Idempotent-Replayed %q)\n%s", again.status, again.replayed, again.body)
				}
				if got := itemID(t, again.body); got != id {
					t.Errorf("the repeat names item %s, the first %s", got, id)
				}
				if c.sameBytes && again.body != first.body {
					t.Errorf("the replay differs from the first stream:\n%s\nfirst:\n%s", again.body, first.body)
				}
			}
			if n := runs.Load() - ran; n != 1 {
				t.Errorf("%d agent runs for one capture and its repeats", n)
			}
			if obs.started() != started || obs.replays() != replayed+2 {
				t.Errorf("observers saw %d captures started and %d replayed for the repeats, want 0 and 2",
					obs.started()-started, obs.replays()-replayed)
			}
			if want := items + 1; strings.Contains(c.path, "follow-up") {
				want = items
				if it, err := h.store.GetInboxItem(context.Background(), testUser, id); err != nil || it.FollowUpRounds != 1 {
					t.Errorf("the followed-up item: %+v, %v", it, err)
				}
			} else if n := len(h.inbox(testUser)); n != want {
				t.Errorf("%d new items for one capture and its repeats", n-items)
			}

			ct, body = c.other()
			if r := h.sendKeyed(testKey, c.path, ct, body, key); r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "Idempotency-Key") {
				t.Errorf("the key with another request: %d %s, want 422", r.status, r.body)
			}
			if runs.Load()-ran != 1 {
				t.Errorf("the refused request ran the agent")
			}
		})
	}
	// The same key on another route is another request.
	if r := h.sendKeyed(testKey, "/api/ag-ui", "application/json", legacy("Call Sarah about the offsite"), `"capture-0"`); r.status != http.StatusUnprocessableEntity {
		t.Errorf("capture-0 on another route: %d %s, want 422", r.status, r.body)
	}
}

// A repeat while the first request still runs is told to come back: 409
// with Retry-After; once the first has filed, the repeat replays it.
func TestIdempotentRepeatWhileRunning(t *testing.T) {
	c := classify(ft.FileCaptureCall("call_1", "Call Sarah about the offsite", "People", 0.9, "classified"), 2)
	gate := ft.NewGate()
	evs := c.Stream()
	held := append(append(append([]ft.Event(nil), evs[:2]...), gate.Hold()), evs[2:]...)
	h := newHarness(t, []ft.Call{
		ft.Expect("POST /threads/runs", ft.Stream(held...)),
		ft.Expect(submitPath(), ft.Stream(c.Continuation()...)),
	})
	const body = `{"text":"Call Sarah about the offsite"}`
	firstc := make(chan keyed, 1)
	go func() {
		firstc <- h.sendKeyed(testKey, "/api/capture", "application/json", body, "3f1c9a8e-5d2b-4c1e-9f00-7a6b5c4d3e2f")
	}()
	select {
	case <-gate.Reached():
	case <-time.After(10 * time.Second):
		t.Fatal("the first run never reached the gate")
	}
	for range 3 {
		r := h.sendKeyed(testKey, "/api/capture", "application/json", body, "3f1c9a8e-5d2b-4c1e-9f00-7a6b5c4d3e2f")
		if r.status != http.StatusConflict || r.retryAfter == "" || r.replayed != "" {
			t.Fatalf("a repeat while the first runs: %d, Retry-After %q\n%s", r.status, r.retryAfter, r.body)
		}
	}
	gate.Open()
	first := <-firstc
	if first.status != http.StatusOK {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := h.sendKeyed(testKey, "/api/capture", "application/json", body, `"3f1c9a8e-5d2b-4c1e-9f00-7a6b5c4d3e2f"`)
	if again.replayed != "true" || again.body != first.body {
		t.Fatalf("after the first filed, the repeat (the same key quoted): %d %q\n%s", again.status, again.replayed, again.body)
	}
}

// A capture that failed filed nothing: its key is given back, and the
// phone's retry runs afresh.
func TestIdempotentRetryAfterAnErrorRuns(t *testing.T) {
	r := ft.NewRun(upThread, upRun)
	c := classify(ft.FileCaptureCall("call_1", "Call Sarah about the offsite", "People", 0.9, "classified"), 2)
	h := newHarness(t, []ft.Call{
		ft.Expect("POST /threads/runs", ft.Stream(r.ThreadCreated(), r.Created(), r.InProgress(), r.Failed("server_error", "Sorry."), ft.Done())),
		ft.Expect("POST /threads/runs", ft.Stream(c.Stream()...)),
		ft.Expect(submitPath(), ft.Stream(c.Continuation()...)),
	})
	const body = `{"text":"Call Sarah about the offsite"}`
	first := h.sendKeyed(testKey, "/api/capture", "application/json", body, `"k"`)
	if !strings.Contains(first.body, `"ERROR"`) {
		t.Fatalf("first: %s", first.body)
	}
	retry := h.sendKeyed(testKey, "/api/capture", "application/json", body, `"k"`)
	if retry.replayed != "" || !strings.Contains(retry.body, `"CLASSIFIED"`) {
		t.Fatalf("the retry after an error: %q\n%s", retry.replayed, retry.body)
	}
	if again := h.sendKeyed(testKey, "/api/capture", "application/json", body, `"k"`); again.replayed != "true" || again.body != retry.body {
		t.Fatalf("the repeat of the filed retry: %q\n%s", again.replayed, again.body)
	}
	if n := len(h.up.Find("POST /threads/runs")); n != 2 {
		t.Errorf("%d runs, want 2", n)
	}
}

// Keys are the user's own: another user's request with the same key is
// another capture.
func TestIdempotencyKeysAreEachUsers(t *testing.T) {
	var runs atomic.Int64
	h := newHarness(t, nil, withCountedSimulator(t, &runs))
	const body = `{"text":"Call Sarah about the offsite"}`
	a := h.sendKeyed(testKey, "/api/capture", "application/json", body, `"shared"`)
	b := h.sendKeyed(otherKey, "/api/capture", "application/json", body, `"shared"`)
	if a.replayed != "" || b.replayed != "" || itemID(t, a.body) == itemID(t, b.body) || runs.Load() != 2 {
		t.Fatalf("two users, one key: %d runs\n%s\n%s", runs.Load(), a.body, b.body)
	}
	if len(h.inbox(testUser)) != 1 || len(h.inbox("bob")) != 1 {
		t.Errorf("inboxes: %d and %d items", len(h.inbox(testUser)), len(h.inbox("bob")))
	}
}

// A malformed key is refused before anything runs; well-formed ones, a
// quoted string or a bare token, are taken.
func TestIdempotencyKeyMalformed(t *testing.T) {
	h := newHarness(t, nil)
	const body = `{"text":"Call Sarah about the offsite"}`
	for name, key := range map[string]string{
		"empty string":         `""`,
		"blank":                ` `,
		"over 255 characters":  `"` + strings.Repeat("k", 256) + `"`,
		"bare, over 255":       strings.Repeat("k", 256),
		"unclosed":             `"abc`,
		"after the quote":      `"abc";x=1`,
		"bad escape":           `"a\nb"`,
		"not ASCII":            `"clé"`,
		"bare with a space":    `a b`,
		"bare with a quote":    `a"b`,
		"a list of two keys":   `"a", "b"`,
		"bare with a comma":    `a,b`,
		"quoted, with a space": `"a` + "\t" + `b"`,
	} {
		t.Run(name, func(t *testing.T) {
			r := h.sendKeyed(testKey, "/api/capture", "application/json", body, key)
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, "Idempotency-Key") {
				t.Errorf("Idempotency-Key %q: %d %s, want 400", key, r.status, r.body)
			}
		})
	}
	// Two header lines are refused too.
	if r := h.send(http.MethodPost, "/api/capture/voice", http.Header{"Authorization": {"Bearer " + testKey}, "Idempotency-Key": {`"a"`, `"b"`}},
		strings.NewReader(body)); r.status != http.StatusBadRequest {
		t.Errorf("two Idempotency-Key lines: %d, want 400", r.status)
	}
	// Characters Go's client will not send, sent raw.
	for _, key := range []string{"\"a\x7fb\"", "a\x01b"} {
		conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /api/capture HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Idempotency-Key: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", testKey, key, len(body), body)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("Idempotency-Key %q: %d, want 400", key, resp.StatusCode)
		}
	}
	if calls := h.up.Requests(); len(calls) != 0 {
		t.Errorf("the agent was called: %v", calls)
	}
}

func TestIdempotencyKeyWellFormed(t *testing.T) {
	var runs atomic.Int64
	h := newHarness(t, nil, withCountedSimulator(t, &runs))
	for i, key := range []string{`"a key with spaces, \"quotes\" and \\"`, `0f8fad5b-d9cb-469f-a165-70867728950e`,
		`"` + strings.Repeat("k", 255) + `"`, `tok:en/with.marks~`} {
		body := fmt.Sprintf(`{"text":"Call Sarah about the offsite %d"}`, i)
		if r := h.sendKeyed(testKey, "/api/capture", "application/json", body, key); r.status != http.StatusOK || r.replayed != "" {
			t.Errorf("Idempotency-Key %s: %d %s", key, r.status, r.body)
		}
		if r := h.sendKeyed(testKey, "/api/capture", "application/json", body, key); r.replayed != "true" {
			t.Errorf("Idempotency-Key %s, repeated: %d %s", key, r.status, r.body)
		}
	}
}

// A replica that stops answering while it runs a keyed capture leaves its
// claim on the key. Once the claim's lease (the run timeout and a grace)
// has lapsed, the phone's repeat on another replica takes the key over
// and runs; what the first replica does after that (here, its request
// ending) cannot give the key back or replace the second's outcome.
func TestIdempotencyKeyOfAStalledReplicaIsTakenOver(t *testing.T) {
	const key, body = "5d0e8c1a-2b7f-4e3d-9a6c-1f2e3d4c5b6a", `{"text":"Call Sarah about the offsite"}`
	gate := ft.NewGate()
	r := ft.NewRun(upThread, upRun)
	a := newHarness(t, []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(r.ThreadCreated(), r.Created(), gate.Hold()))},
		withRunTimeout(time.Minute))
	t.Cleanup(gate.Open)

	ctx, stopA := context.WithCancel(context.Background())
	defer stopA()
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.srv.URL+"/api/capture", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Idempotency-Key", key)
		if resp, err := a.srv.Client().Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-gate.Reached():
	case <-time.After(10 * time.Second):
		t.Fatal("the first replica's run never started")
	}

	// The second replica, on the same store, at a time when a claim made
	// at the first's would still hold, then when it has lapsed.
	var later atomic.Int64
	later.Store(int64(time.Minute))
	b := a.secondReplica(func() time.Time { return fixedNow.Add(time.Duration(later.Load())) })
	if got := b.sendKeyed(testKey, "/api/capture", "application/json", body, key); got.status != http.StatusConflict {
		t.Fatalf("a repeat while the claim holds: %d %s, want 409", got.status, got.body)
	}
	later.Store(int64(time.Minute + 31*time.Second))
	took := b.sendKeyed(testKey, "/api/capture", "application/json", body, key)
	if took.status != http.StatusOK || took.replayed != "" || !strings.Contains(took.body, `"type":"CLASSIFIED"`) {
		t.Fatalf("a repeat after the claim lapsed: %d %q\n%s\nwant the capture run afresh", took.status, took.replayed, took.body)
	}

	stopA()
	<-firstDone
	again := b.sendKeyed(testKey, "/api/capture", "application/json", body, key)
	if again.replayed != "true" || itemID(t, again.body) != itemID(t, took.body) {
		t.Fatalf("a repeat after the first replica's request ended: %d %q\n%s\nwant the replay of %s", again.status, again.replayed, again.body, itemID(t, took.body))
	}
	if items := a.inbox(testUser); len(items) != 1 {
		t.Errorf("%d inbox items, want the one the second replica filed", len(items))
	}
}

// A replica that stalls (or dies) after filing a capture, before its run
// ends, leaves nothing for a repeat to file again: the filing settled the
// key, so the phone's repeat on another replica, even once the claim's
// lease is over, replays the item the phone was told of.
func TestIdempotencyKeyOfAReplicaStalledAfterFilingReplays(t *testing.T) {
	const key, body = "b8a1d0c2-7e4f-4a3b-8c9d-0e1f2a3b4c5d", `{"text":"Call Sarah about the offsite"}`
	c := classify(ft.FileCaptureCall("call_1", "Call Sarah about the offsite", "People", 0.9, "classified"), 2)
	gate := ft.NewGate()
	t.Cleanup(gate.Open)
	a := newHarness(t, []ft.Call{
		ft.Expect("POST /threads/runs", ft.Stream(c.Stream()...)),
		ft.Expect(submitPath(), ft.Stream(append([]ft.Event{gate.Hold()}, c.Continuation()...)...)),
	}, withRunTimeout(time.Minute))

	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/api/capture", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Idempotency-Key", key)
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The phone hears its outcome; the replica then stalls before its run
	// ends (the agent's closing words never come).
	var told string
	br := bufio.NewReader(resp.Body)
	for told == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before the outcome: %v", err)
		}
		if strings.Contains(line, `"type":"CLASSIFIED"`) {
			told = strings.TrimSpace(strings.TrimPrefix(line, "data: "))
		}
	}
	select {
	case <-gate.Reached():
	case <-time.After(10 * time.Second):
		t.Fatal("the first replica's run never stalled")
	}

	// The second replica, on the same store, once the claim has lapsed.
	b := a.secondReplica(func() time.Time { return fixedNow.Add(time.Hour) })
	again := b.sendKeyed(testKey, "/api/capture", "application/json", body, key)
	if again.replayed != "true" || !strings.Contains(again.body, told) {
		t.Fatalf("the repeat after the first replica filed and stalled: %d %q\n%s\nwant the replay of %s", again.status, again.replayed, again.body, told)
	}
	if items := a.inbox(testUser); len(items) != 1 {
		t.Errorf("%d inbox items, want the one the first replica filed", len(items))
	}
}

// secondReplica is another server on h's store, with its clock now and
// the simulator upstream: a replica the phone's repeat reaches.
func (h *harness) secondReplica(now func() time.Time) *harness {
	h.t.Helper()
	var n atomic.Int64
	cfg := server.Config{Keys: server.Keys{testKey: testUser}, Store: h.store, RunTimeout: time.Minute,
		NewID: func() string { return fmt.Sprintf("b%d", n.Add(1)) }, Now: now}
	withSimulator(h.t)(&cfg)
	s, err := server.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	h.t.Cleanup(srv.Close)
	return &harness{t: h.t, srv: srv, store: h.store}
}
