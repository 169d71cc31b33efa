package shadow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/responses"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/shadow"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/wiring"
)

const (
	apiKey = "test-key-0123456789abcdef"
	user   = "alice"
	// production files "Renew the passport" in Admin; the candidate's
	// rules move it to Projects.
	production = "Classify the capture."
	candidate  = "Classify the capture.\nIgnore cues: renew\nProjects cues: passport\n"
)

var fixedNow = time.Date(2026, 11, 23, 8, 30, 0, 0, time.UTC)

// trials is the SQLite store keeping shadow trials in memory, by item.
// hold, when set, holds each trial until it is closed or its shadow's
// context ends.
type trials struct {
	*sqlite.Store
	hold chan struct{}
	mu   sync.Mutex
	kept map[string]brainwire.ShadowTrial
}

func (s *trials) RecordShadow(ctx context.Context, userID, id string, t brainwire.ShadowTrial) error {
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if _, err := s.GetInboxItem(ctx, userID, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept[id] = t
	return nil
}

func (s *trials) trial(id string) (brainwire.ShadowTrial, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.kept[id]
	return t, ok
}

// watcher is an observer that watches shadows: each one's end (kept, or
// dropped and why) is sent on ends.
type watcher struct {
	started atomic.Int32
	ends    chan string
}

func (w *watcher) StartCapture(ctx context.Context, _ brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return ctx, w
}
func (w *watcher) ProviderEvent(brainwire.AgentEvent)  {}
func (w *watcher) CaptureEvent(brainwire.CaptureEvent) {}
func (w *watcher) End(brainwire.CaptureResult)         {}
func (w *watcher) StartShadow(ctx context.Context, _ brainwire.Capture, _ brainwire.TraceRef) (context.Context, brainwire.CaptureObserver) {
	w.started.Add(1)
	return ctx, w
}
func (w *watcher) ShadowKept(context.Context, brainwire.ShadowTrial) { w.ends <- "kept" }
func (w *watcher) ShadowDropped(_ context.Context, reason string)    { w.ends <- reason }

// end waits for the next shadow to end and says how.
func (w *watcher) end(t *testing.T) string {
	t.Helper()
	select {
	case e := <-w.ends:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no shadow ended")
		return ""
	}
}

// world is a real server (the Responses provider, retries, SQLite) in
// front of the simulator's Responses face, with a shadow runner when cfg
// is given.
type world struct {
	t      *testing.T
	url    string
	store  *trials
	runner *shadow.Runner
	watch  *watcher
	heard  transcriber
}

func newWorld(t *testing.T, cfg *shadow.Config) *world {
	t.Helper()
	var simIDs atomic.Int64
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1,
		NewID: func(prefix string) string { return fmt.Sprintf("%s_%d", prefix, simIDs.Add(1)) }}))
	t.Cleanup(sim.Close)
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "brainwire.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := &world{t: t, store: &trials{Store: st, kept: map[string]brainwire.ShadowTrial{}}, watch: &watcher{ends: make(chan string, 16)}}
	if cfg != nil {
		cfg.Store = w.store
		if cfg.Timeout == 0 {
			cfg.Timeout = 10 * time.Second
		}
		w.runner = shadow.New(*cfg)
		t.Cleanup(w.runner.Drain)
	}
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var ids atomic.Int64
	project := sim.URL + simulator.ProjectPath
	auth := func(next http.RoundTripper) http.RoundTripper {
		return foundry.NewStaticTokenTransport("simulator", next)
	}
	srv, err := wiring.New(wiring.Config{
		Server: server.Config{Keys: server.Keys{apiKey: user}, Store: st, Blobs: blobs, Transcriber: &w.heard, Observer: w.watch, Shadow: w.runner, KeepAlive: -1,
			NewID: func() string { return fmt.Sprintf("id%d", ids.Add(1)) }, Now: func() time.Time { return fixedNow }},
		Agent: wiring.Responses(project+"/openai/v1", project, responses.Agent{Model: simulator.DefaultModel, Instructions: production}, auth,
			responses.WithReasoningSummary("auto")),
		Retry: retry.Policy{Retries: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.RefreshAgent(t.Context()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	w.url = hs.URL
	return w
}

// transcriber hears every voice note say "Renew the passport", and
// counts the notes.
type transcriber struct{ n atomic.Int32 }

func (tr *transcriber) Transcribe(context.Context, io.Reader, string, string) (string, error) {
	tr.n.Add(1)
	return "Renew the passport", nil
}

// capture sends text as a capture and returns the phone's stream, whole.
func (w *world) capture(text string) string {
	w.t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	return w.send("/api/capture", "application/json", string(body))
}

// voice sends a voice note as a capture and returns the phone's stream.
func (w *world) voice() string {
	w.t.Helper()
	var body strings.Builder
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "note.wav")
	fw.Write([]byte("RIFF\x24\x00\x00\x00WAVEfmt "))
	mw.Close()
	return w.send("/api/capture/voice", mw.FormDataContentType(), body.String())
}

func (w *world) send(path, contentType, body string) string {
	w.t.Helper()
	req, _ := http.NewRequestWithContext(w.t.Context(), http.MethodPost, w.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		w.t.Fatalf("capture: %d %v\n%s", resp.StatusCode, err, b)
	}
	return string(b)
}

// filed is every item in the store, newest first, with its bucket
// record: what the captures filed.
func (w *world) filed() (items []brainwire.InboxItem, records []brainwire.BucketRecord) {
	w.t.Helper()
	page, err := w.store.ListInbox(w.t.Context(), user, brainwire.ListOptions{Limit: brainwire.MaxPageSize})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, it := range page.Items {
		if it.FiledRecordID == "" {
			continue
		}
		rec, err := w.store.GetBucketRecord(w.t.Context(), user, it.ClassificationMeta.Bucket, it.FiledRecordID)
		if err != nil {
			w.t.Fatal(err)
		}
		records = append(records, rec)
	}
	return page.Items, records
}

var texts = []string{"Renew the passport", "Call mom about her birthday on Sunday", "Draft the launch plan for the app"}

// TestASampledCaptureKeepsTheCandidatesTrialAndFilesNothingElse: with
// shadow at 1.0 every capture that filed gets a trial naming the
// candidate's version, its own run and what it would have filed, beside
// production's; the phone's bytes and what the store holds are those of
// a server with no shadow.
func TestASampledCaptureKeepsTheCandidatesTrialAndFilesNothingElse(t *testing.T) {
	on := newWorld(t, &shadow.Config{Instructions: candidate, Sample: 1})
	off := newWorld(t, nil)
	for _, text := range texts {
		got, want := on.capture(text), off.capture(text)
		if got != want {
			t.Fatalf("the phone's stream of %q with shadow on:\n%s\nwith it off:\n%s", text, got, want)
		}
		if e := on.watch.end(t); e != "kept" {
			t.Fatalf("shadow of %q: %s", text, e)
		}
	}
	items, records := on.filed()
	offItems, offRecords := off.filed()
	for i := range items {
		// The simulator numbers its conversations, and each shadow has
		// one of its own.
		items[i].UpstreamThreadID, offItems[i].UpstreamThreadID = "", ""
	}
	if len(items) != len(texts) || !jsonEqual(items, offItems) || !jsonEqual(records, offRecords) {
		t.Fatalf("filed with shadow on:\n%v\n%v\nwith it off:\n%v\n%v", items, records, offItems, offRecords)
	}
	version := brainwire.ContentVersion(candidate)
	for _, it := range items {
		tr, ok := on.store.trial(it.ID)
		if !ok {
			t.Fatalf("no trial on %q", it.RawText)
		}
		c, p := tr.Candidate, tr.Production
		if p != *it.AgentRun || c.AgentVersion != version || c.RunID == "" || c.RunID == p.RunID || c.Model != simulator.DefaultModel ||
			c.InstructionsHash == "" || c.InstructionsHash == p.InstructionsHash || tr.CandidateReasoning == "" || tr.ProductionReasoning == "" ||
			len(tr.CandidateReasoning) > brainwire.MaxShadowReasoning || tr.At.IsZero() {
			t.Errorf("trial on %q: %+v", it.RawText, tr)
		}
		wantBucket := p.Bucket
		if it.RawText == "Renew the passport" {
			if p.Bucket != "Admin" {
				t.Fatalf("production filed %q in %s", it.RawText, p.Bucket)
			}
			wantBucket = "Projects"
		}
		if c.Bucket != wantBucket || !c.Outcome.Filed() {
			t.Errorf("the candidate filed %q as %s in %s; want %s", it.RawText, c.Outcome, c.Bucket, wantBucket)
		}
	}
	if n := on.watch.started.Load(); n != int32(len(texts)) {
		t.Errorf("%d shadows started; want %d", n, len(texts))
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestABusyShadowDropsTheNext: beyond the concurrency limit a sampled
// capture's shadow is dropped (busy) and counted, not queued; the phone
// has its outcome all the same.
func TestABusyShadowDropsTheNext(t *testing.T) {
	w := newWorld(t, &shadow.Config{Instructions: candidate, Sample: 1, Concurrency: 1})
	w.store.hold = make(chan struct{})
	w.capture(texts[0])
	w.capture(texts[1])
	if e := w.watch.end(t); e != brainwire.ShadowBusy {
		t.Fatalf("the second shadow ended %s; want busy", e)
	}
	close(w.store.hold)
	if e := w.watch.end(t); e != "kept" {
		t.Fatalf("the held shadow ended %s; want kept", e)
	}
	if n := w.watch.started.Load(); n != 1 {
		t.Errorf("%d shadows started; want 1", n)
	}
}

// TestAThrottledShadowIsDroppedWithoutRetry: when the agent service
// pushes back (429), production's call is sent again and files; the
// shadow's is not, and the shadow is dropped as throttled.
func TestAThrottledShadowIsDroppedWithoutRetry(t *testing.T) {
	w := newWorld(t, &shadow.Config{Instructions: candidate, Sample: 1})
	s := w.capture("Renew the passport #refuse:429:1")
	if !strings.Contains(s, "Admin") {
		t.Fatalf("production did not file through the 429:\n%s", s)
	}
	if e := w.watch.end(t); e != brainwire.ShadowThrottled {
		t.Fatalf("shadow ended %s; want throttled", e)
	}
	items, _ := w.filed()
	if _, ok := w.store.trial(items[0].ID); ok {
		t.Error("a throttled shadow kept a trial")
	}
}

// TestDrainingCancelsARunningShadow: a shadow still running when the
// server drains is stopped and counted as draining; later offers are
// dropped so too.
func TestDrainingCancelsARunningShadow(t *testing.T) {
	w := newWorld(t, &shadow.Config{Instructions: candidate, Sample: 1})
	w.store.hold = make(chan struct{})
	w.capture(texts[0])
	deadline := time.Now().Add(10 * time.Second)
	for w.watch.started.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	w.runner.Drain()
	if e := w.watch.end(t); e != brainwire.ShadowDraining {
		t.Fatalf("the running shadow ended %s; want draining", e)
	}
	w.capture(texts[1])
	if e := w.watch.end(t); e != brainwire.ShadowDraining {
		t.Fatalf("a shadow offered after the drain ended %s; want draining", e)
	}
}

// TestSamplingFollowsTheRunID: at 0.5 the captures tried are those whose
// run id brainwire.ShadowSampled picks, and only they.
func TestSamplingFollowsTheRunID(t *testing.T) {
	w := newWorld(t, &shadow.Config{Instructions: candidate, Sample: 0.5})
	var want []string
	for i := range 8 {
		text := fmt.Sprintf("Renew the passport %d", i)
		w.capture(text)
		items, _ := w.filed()
		i := slices.IndexFunc(items, func(it brainwire.InboxItem) bool { return it.RawText == text })
		if brainwire.ShadowSampled(items[i].AgentRun.RunID, 0.5) {
			want = append(want, items[i].ID)
			if e := w.watch.end(t); e != "kept" {
				t.Fatalf("shadow of %q: %s", text, e)
			}
		}
	}
	w.store.mu.Lock()
	got := slices.Sorted(func(yield func(string) bool) {
		for id := range w.store.kept {
			if !yield(id) {
				return
			}
		}
	})
	w.store.mu.Unlock()
	slices.Sort(want)
	if len(want) == 0 || len(want) == 8 || !slices.Equal(got, want) {
		t.Fatalf("trials on %v; want %v", got, want)
	}
}

// TestAShadowPastItsTimeoutIsDropped: a shadow that outlasts its own
// timeout is dropped as timeout, keeping nothing.
func TestAShadowPastItsTimeoutIsDropped(t *testing.T) {
	w := newWorld(t, &shadow.Config{Instructions: candidate, Sample: 1, Timeout: 200 * time.Millisecond})
	w.store.hold = make(chan struct{})
	w.capture(texts[0])
	if e := w.watch.end(t); e != brainwire.ShadowTimeout {
		t.Fatalf("shadow ended %s; want timeout", e)
	}
}

// TestAVoiceCapturesCandidateReadsItsTranscript: the candidate gets the
// words production's run transcribed, as text, and files them its way
// without transcribing the note again.
func TestAVoiceCapturesCandidateReadsItsTranscript(t *testing.T) {
	w := newWorld(t, &shadow.Config{Instructions: candidate, Sample: 1})
	w.voice()
	if e := w.watch.end(t); e != "kept" {
		t.Fatalf("shadow ended %s", e)
	}
	items, _ := w.filed()
	tr, ok := w.store.trial(items[0].ID)
	if len(items) != 1 || items[0].RawText != "Renew the passport" || items[0].Source != "voice" || !ok ||
		tr.Production.Bucket != "Admin" || tr.Candidate.Bucket != "Projects" {
		t.Fatalf("items %+v, trial %+v", items, tr)
	}
	if n := w.heard.n.Load(); n != 1 {
		t.Errorf("the note was transcribed %d times; want once, by production", n)
	}
}
