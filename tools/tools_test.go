package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/transcription"
)

var now = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func newDeps(t *testing.T) Deps {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var n atomic.Int64
	return Deps{Store: st, AgentName: "Classifier", Now: func() time.Time { return now },
		NewID: func() string { return fmt.Sprintf("id-%d", n.Add(1)) }}
}

func call(name, args string) brainwire.ToolCall {
	return brainwire.ToolCall{ID: "call_1", Name: name, Arguments: json.RawMessage(args), ThreadID: "thread_up", RunID: "run_up"}
}

func decode[T any](t *testing.T, res brainwire.ToolResult) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(res.Output), &v); err != nil {
		t.Fatalf("output %q: %v", res.Output, err)
	}
	return v
}

func TestFileCaptureClassifiedWritesLinkedDocuments(t *testing.T) {
	deps := newDeps(t)
	set := New(deps, brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", Text: "Call mom about her birthday"})
	res := set.Call(context.Background(), call(brainwire.ToolFileCapture,
		`{"text":"call mom","bucket":"People","confidence":0.92,"status":"classified","title":"Mom"}`))
	if res.IsError {
		t.Fatalf("error result: %s", res.Output)
	}
	got := decode[brainwire.FileCaptureResult](t, res)
	if got.Bucket != "People" || got.Confidence != 0.92 || got.Status != "classified" || got.ItemID == "" {
		t.Fatalf("result %+v", got)
	}
	item, err := deps.Store.GetInboxItem(context.Background(), "u1", got.ItemID)
	if err != nil {
		t.Fatal(err)
	}
	if item.RawText != "Call mom about her birthday" || item.Title != "Mom" || item.Status != "classified" ||
		item.UpstreamThreadID != "thread_up" || item.ClassificationMeta.ClassifiedBy != "Classifier" {
		t.Fatalf("item %+v", item)
	}
	rec, err := deps.Store.GetBucketRecord(context.Background(), "u1", "People", item.FiledRecordID)
	if err != nil || rec.InboxRecordID != item.ID {
		t.Fatalf("record %+v, %v", rec, err)
	}
	if set.FiledItemID() != item.ID {
		t.Fatalf("FiledItemID = %q", set.FiledItemID())
	}
}

func TestFileCaptureStatusFollowsTheThreshold(t *testing.T) {
	for _, c := range []struct {
		args, want string
	}{
		{`{"bucket":"Ideas","confidence":0.4,"status":"classified"}`, "pending"},
		{`{"bucket":"Ideas","confidence":0.6,"status":"pending"}`, "classified"},
		{`{"bucket":"","confidence":0.1,"status":"misunderstood","question":"?"}`, "misunderstood"},
	} {
		set := New(newDeps(t), brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", Text: "x"})
		res := set.Call(context.Background(), call(brainwire.ToolFileCapture, c.args))
		if got := decode[brainwire.FileCaptureResult](t, res); res.IsError || got.Status != c.want {
			t.Errorf("%s: got %s, want status %s", c.args, res.Output, c.want)
		}
	}
}

func TestFileCaptureRejectsBadArgumentsAndStoresNothing(t *testing.T) {
	cases := map[string]string{
		`{"bucket":"Misc","confidence":0.8,"status":"classified"}`:   "invalid_bucket",
		`{"bucket":"People","confidence":0.8,"status":"filed"}`:      "invalid_status",
		`{"bucket":"People","confidence":1.5,"status":"classified"}`: "invalid_confidence",
		`not json`: "invalid_arguments",
	}
	for args, code := range cases {
		deps := newDeps(t)
		set := New(deps, brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", Text: "x"})
		res := set.Call(context.Background(), call(brainwire.ToolFileCapture, args))
		e := decode[toolError](t, res)
		if !res.IsError || e.Code != code {
			t.Errorf("%s: got %s, want error %s", args, res.Output, code)
		}
		page, err := deps.Store.ListInbox(context.Background(), "u1", brainwire.ListOptions{})
		if err != nil || len(page.Items) != 0 {
			t.Errorf("%s: stored %d items (%v)", args, len(page.Items), err)
		}
	}
	res := New(newDeps(t), brainwire.Capture{Kind: brainwire.KindText, UserID: "u1"}).Call(context.Background(), call(brainwire.ToolFileCapture, `{"bucket":"Misc","confidence":0.8,"status":"classified"}`))
	if e := decode[toolError](t, res); len(e.Valid) != 4 {
		t.Errorf("invalid_bucket does not list the valid buckets: %s", res.Output)
	}
}

func TestConcurrentFilingsFileOnce(t *testing.T) {
	deps := newDeps(t)
	set := New(deps, brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", Text: "x"})
	var wg sync.WaitGroup
	results := make([]brainwire.ToolResult, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = set.Call(context.Background(), call(brainwire.ToolFileCapture, `{"bucket":"Admin","confidence":0.9,"status":"classified"}`))
		}()
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		if !r.IsError {
			ok++
		} else if decode[toolError](t, r).Code != "already_filed" {
			t.Errorf("unexpected error %s", r.Output)
		}
	}
	page, _ := deps.Store.ListInbox(context.Background(), "u1", brainwire.ListOptions{})
	if ok != 1 || len(page.Items) != 1 {
		t.Fatalf("%d successful filings, %d items", ok, len(page.Items))
	}
}

func TestFollowUpFilesOntoTheExistingItem(t *testing.T) {
	deps := newDeps(t)
	ctx := context.Background()
	first := New(deps, brainwire.Capture{Kind: brainwire.KindVoice, UserID: "u1", AudioURL: "file:///a.wav"})
	res := first.Call(ctx, call(brainwire.ToolFileCapture, `{"text":"asdf","confidence":0.1,"status":"misunderstood","question":"What?"}`))
	if res.IsError || res.Filed == nil || res.Filed.Question != "What?" || res.Filed.Status != brainwire.StatusMisunderstood {
		t.Fatalf("misunderstood filing: %s %+v", res.Output, res.Filed)
	}
	if strings.Contains(res.Output, "What?") {
		t.Fatalf("the agent is sent its own question back: %s", res.Output)
	}
	item, err := deps.Store.GetInboxItem(ctx, "u1", res.Filed.ItemID)
	if err != nil {
		t.Fatal(err)
	}
	follow := New(deps, brainwire.Capture{Kind: brainwire.KindFollowUp, UserID: "u1", Text: "the project",
		FollowUp: &brainwire.FollowUp{Item: item, Round: 1}})
	res = follow.Call(ctx, call(brainwire.ToolFileCapture, `{"bucket":"Projects","confidence":0.8,"status":"classified"}`))
	if got := decode[brainwire.FileCaptureResult](t, res); res.IsError || got.ItemID != item.ID || *res.Filed != got {
		t.Fatalf("follow-up result %s (%+v), want item %s", res.Output, res.Filed, item.ID)
	}
	page, _ := deps.Store.ListInbox(ctx, "u1", brainwire.ListOptions{})
	if len(page.Items) != 1 {
		t.Fatalf("inbox after follow-up: %+v", page.Items)
	}
	got := page.Items[0]
	if got.Status != "classified" || got.FiledRecordID == "" || got.RawText != "asdf\nthe project" ||
		got.Source != brainwire.KindVoice || got.FollowUpRounds != 1 {
		t.Fatalf("refiled item: %+v", got)
	}
}

func TestStoreFailureIsAToolError(t *testing.T) {
	deps := newDeps(t)
	deps.Store.Close()
	res := New(deps, brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", Text: "x"}).Call(context.Background(), call(brainwire.ToolFileCapture, `{"bucket":"Admin","confidence":0.9,"status":"classified"}`))
	if e := decode[toolError](t, res); !res.IsError || e.Code != "store_failed" || res.ErrorCode != e.Code || res.Filed != nil {
		t.Fatalf("got %s", res.Output)
	}
}

// A follow-up's filing refused because a person changed or deleted its
// item is marked for the server, with the store's code; the agent's answer
// stays store_failed. Other store failures are not so marked.
func TestFollowUpRefusedByAPersonsEditIsSuperseded(t *testing.T) {
	ctx := context.Background()
	deps := newDeps(t)
	misunderstood := func() brainwire.InboxItem {
		res := New(deps, brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", Text: "asdf"}).
			Call(ctx, call(brainwire.ToolFileCapture, `{"confidence":0.1,"status":"misunderstood","question":"What?"}`))
		item, err := deps.Store.GetInboxItem(ctx, "u1", res.Filed.ItemID)
		if err != nil {
			t.Fatal(err)
		}
		return item
	}
	followUp := func(item brainwire.InboxItem, token string) brainwire.ToolResult {
		return New(deps, brainwire.Capture{Kind: brainwire.KindFollowUp, UserID: "u1", Text: "the project",
			FollowUp: &brainwire.FollowUp{Item: item, Round: 1, ClaimToken: token}}).
			Call(ctx, call(brainwire.ToolFileCapture, `{"bucket":"Projects","confidence":0.8,"status":"classified"}`))
	}

	// Its claim was dropped (a recategorize does that): conflict.
	changed := misunderstood()
	if res := followUp(changed, "a-claim-it-no-longer-holds"); decode[toolError](t, res).Code != "store_failed" || res.Superseded != brainwire.EConflict {
		t.Errorf("changed item: %s, superseded %q", res.Output, res.Superseded)
	}
	deleted := misunderstood()
	if err := deps.Store.DeleteInboxItem(ctx, "u1", deleted.ID); err != nil {
		t.Fatal(err)
	}
	if res := followUp(deleted, ""); decode[toolError](t, res).Code != "store_failed" || res.Superseded != brainwire.ENotFound {
		t.Errorf("deleted item: %s, superseded %q", res.Output, res.Superseded)
	}
	// A store that is down supersedes nothing.
	item := misunderstood()
	deps.Store.Close()
	if res := followUp(item, ""); !res.IsError || res.Superseded != "" {
		t.Errorf("store down: %s, superseded %q", res.Output, res.Superseded)
	}
}

func TestUnknownTool(t *testing.T) {
	res := New(newDeps(t), brainwire.Capture{Kind: brainwire.KindText, UserID: "u1"}).Call(context.Background(), call("rm_rf", `{}`))
	if e := decode[toolError](t, res); !res.IsError || e.Code != "unknown_tool" {
		t.Fatalf("got %s", res.Output)
	}
}

func TestDefinitions(t *testing.T) {
	text := New(newDeps(t), brainwire.Capture{Kind: brainwire.KindText, UserID: "u1"}).Definitions()
	voice := New(newDeps(t), brainwire.Capture{Kind: brainwire.KindVoice, UserID: "u1", AudioURL: "file:///a.wav"}).Definitions()
	if len(text) != 1 || text[0].Name != brainwire.ToolFileCapture || len(voice) != 2 || voice[1].Name != brainwire.ToolTranscribeAudio {
		t.Fatalf("text %v, voice %v", text, voice)
	}
	for _, d := range voice {
		var schema map[string]any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Fatalf("%s schema: %v %v", d.Name, schema, err)
		}
	}
}

// transcriptionServer answers like the Azure OpenAI transcription API.
func transcriptionServer(t *testing.T, status int, answer string) *transcription.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil || r.MultipartForm.File["file"] == nil {
			http.Error(w, `{"error":{"code":"bad","message":"no file"}}`, 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, answer)
	}))
	t.Cleanup(srv.Close)
	c, err := transcription.New(transcription.Config{Endpoint: srv.URL, Deployment: "whisper", APIKey: "k"}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// withAudio gives deps local audio storage holding one upload, and a
// transcriber that hears transcript in it; it returns the upload's URL.
func withAudio(t *testing.T, deps *Deps, transcript string) string {
	t.Helper()
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	url, err := blobs.Put(context.Background(), "a.wav", "audio/wav", strings.NewReader("RIFF....WAVE"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(TranscribeResult{Text: transcript})
	deps.Blobs, deps.Transcriber = blobs, transcriptionServer(t, 200, string(b))
	return url
}

func TestTranscribeAudio(t *testing.T) {
	deps := newDeps(t)
	url := withAudio(t, &deps, "Call the dentist on Monday")
	set := New(deps, brainwire.Capture{Kind: brainwire.KindVoice, UserID: "u1", AudioURL: url})

	res := set.Call(context.Background(), call(brainwire.ToolTranscribeAudio, `{"blob_url":"file:///etc/passwd"}`))
	if e := decode[toolError](t, res); !res.IsError || e.Code != "unknown_blob" {
		t.Fatalf("foreign blob: %s", res.Output)
	}
	res = set.Call(context.Background(), call(brainwire.ToolTranscribeAudio, fmt.Sprintf(`{"blob_url":%q}`, url)))
	if got := decode[TranscribeResult](t, res); res.IsError || got.Text != "Call the dentist on Monday" {
		t.Fatalf("transcribe: %s", res.Output)
	}
	// The transcript, not the agent's paraphrase, is what gets filed.
	res = set.Call(context.Background(), call(brainwire.ToolFileCapture, `{"text":"dentist","bucket":"Admin","confidence":0.9,"status":"classified"}`))
	item, err := deps.Store.GetInboxItem(context.Background(), "u1", decode[brainwire.FileCaptureResult](t, res).ItemID)
	if err != nil || item.RawText != "Call the dentist on Monday" || item.Source != brainwire.KindVoice {
		t.Fatalf("item %+v, %v", item, err)
	}
}

func TestTranscribeAudioErrorsAreToolErrors(t *testing.T) {
	deps := newDeps(t)
	blobs, _ := localblob.New(t.TempDir())
	url, _ := blobs.Put(context.Background(), "a.wav", "audio/wav", strings.NewReader("not audio"))
	deps.Blobs = blobs

	res := New(deps, brainwire.Capture{Kind: brainwire.KindVoice, UserID: "u1", AudioURL: url}).Call(context.Background(), call(brainwire.ToolTranscribeAudio, fmt.Sprintf(`{"blob_url":%q}`, url)))
	if e := decode[toolError](t, res); !res.IsError || e.Code != "transcription_unavailable" {
		t.Fatalf("unconfigured: %s", res.Output)
	}
	deps.Transcriber = transcriptionServer(t, 400, `{"error":{"code":"invalid_value","message":"Invalid file format."}}`)
	res = New(deps, brainwire.Capture{Kind: brainwire.KindVoice, UserID: "u1", AudioURL: url}).Call(context.Background(), call(brainwire.ToolTranscribeAudio, fmt.Sprintf(`{"blob_url":%q}`, url)))
	if e := decode[toolError](t, res); !res.IsError || e.Code != "invalid_audio" {
		t.Fatalf("undecodable audio: %s", res.Output)
	}
	_ = blobs.Delete(context.Background(), url)
	res = New(deps, brainwire.Capture{Kind: brainwire.KindVoice, UserID: "u1", AudioURL: url}).Call(context.Background(), call(brainwire.ToolTranscribeAudio, fmt.Sprintf(`{"blob_url":%q}`, url)))
	if e := decode[toolError](t, res); !res.IsError || e.Code != "audio_unavailable" {
		t.Fatalf("missing audio: %s", res.Output)
	}
}

// TestFileCaptureKeepsTheAgentRun checks that the item remembers which
// agent version filed what, and where the run was traced.
func TestFileCaptureKeepsTheAgentRun(t *testing.T) {
	deps := newDeps(t)
	c := brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", RunID: "run-7", Text: "maybe a garden app",
		Agent: brainwire.AgentInfo{ID: "asst_1", Version: "v3", InstructionsHash: "3f2a9c1b04de", Model: "gpt-4o"},
		Trace: brainwire.TraceRef{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"}}
	for _, tc := range []struct {
		args    string
		outcome brainwire.Outcome
	}{
		{`{"text":"x","bucket":"Ideas","confidence":0.4,"status":"classified"}`, brainwire.OutcomeLowConfidence},
		{`{"text":"x","bucket":"Ideas","confidence":0.2,"status":"misunderstood","question":"What?"}`, brainwire.OutcomeMisunderstood},
	} {
		res := New(deps, c).Call(context.Background(), call(brainwire.ToolFileCapture, tc.args))
		if res.IsError {
			t.Fatalf("error result: %s", res.Output)
		}
		item, err := deps.Store.GetInboxItem(context.Background(), "u1", res.Filed.ItemID)
		if err != nil {
			t.Fatal(err)
		}
		want := brainwire.AgentRun{RunID: "run-7", AgentVersion: "v3", InstructionsHash: "3f2a9c1b04de", Model: "gpt-4o",
			Outcome: tc.outcome, Bucket: "Ideas", Confidence: res.Filed.Confidence,
			TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"}
		if item.AgentRun == nil || *item.AgentRun != want {
			t.Errorf("agent run %+v, want %+v", item.AgentRun, want)
		}
	}
}

// TestKeepUnresolved keeps a capture the agent did not file as an
// unresolved item, with the person's words (a voice capture's transcript)
// and the run that left it, but only once, never after a filing and never
// for a follow-up.
func TestKeepUnresolved(t *testing.T) {
	ctx := context.Background()
	deps := newDeps(t)
	c := brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", RunID: "run-7", Text: "qwerty zxcv",
		Agent: brainwire.AgentInfo{Version: "v3", InstructionsHash: "3f2a9c1b04de", Model: "gpt-4o"},
		Trace: brainwire.TraceRef{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"}}
	set := New(deps, c)
	id, err := set.KeepUnresolved(ctx, "thread_up")
	if err != nil || id == "" {
		t.Fatalf("KeepUnresolved = %q, %v", id, err)
	}
	item, err := deps.Store.GetInboxItem(ctx, "u1", id)
	if err != nil {
		t.Fatal(err)
	}
	want := brainwire.AgentRun{RunID: "run-7", AgentVersion: "v3", InstructionsHash: "3f2a9c1b04de", Model: "gpt-4o",
		Outcome: brainwire.OutcomeUnresolved, TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"}
	if item.Status != brainwire.StatusUnresolved || item.RawText != "qwerty zxcv" || item.Title != "qwerty zxcv" ||
		item.FiledRecordID != "" || item.UpstreamThreadID != "thread_up" || item.Source != brainwire.KindText ||
		item.ClassificationMeta == nil || item.ClassificationMeta.Bucket != "" {
		t.Errorf("unresolved item %+v", item)
	}
	if item.AgentRun == nil || *item.AgentRun != want {
		t.Errorf("agent run %+v, want %+v", item.AgentRun, want)
	}
	if again, err := set.KeepUnresolved(ctx, "thread_up"); again != "" || err != nil {
		t.Errorf("second KeepUnresolved = %q, %v; want nothing kept", again, err)
	}
	if res := set.Call(ctx, call(brainwire.ToolFileCapture, `{"bucket":"Admin","confidence":0.9,"status":"classified"}`)); !res.IsError {
		t.Errorf("a late file_capture filed the kept capture again: %s", res.Output)
	}

	filed := New(deps, brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", Text: "Call mom"})
	filed.Call(ctx, call(brainwire.ToolFileCapture, `{"bucket":"People","confidence":0.9,"status":"classified"}`))
	followUp := New(deps, brainwire.Capture{Kind: brainwire.KindFollowUp, UserID: "u1", Text: "the project",
		FollowUp: &brainwire.FollowUp{Item: item, Round: 1}})
	for name, s := range map[string]*Set{"a filed capture": filed, "a follow-up": followUp} {
		if id, err := s.KeepUnresolved(ctx, "thread_up"); id != "" || err != nil {
			t.Errorf("KeepUnresolved of %s = %q, %v; want nothing kept", name, id, err)
		}
	}
	if page, _ := deps.Store.ListInbox(ctx, "u1", brainwire.ListOptions{}); len(page.Items) != 2 {
		t.Errorf("inbox holds %d items, want the unresolved and the filed one", len(page.Items))
	}
}

// TestKeepUnresolvedVoice keeps the transcript of a voice capture, made
// then if the agent never asked for one.
func TestKeepUnresolvedVoice(t *testing.T) {
	ctx := context.Background()
	deps := newDeps(t)
	url := withAudio(t, &deps, "hmm what was it")
	heard := New(deps, brainwire.Capture{Kind: brainwire.KindVoice, UserID: "u1", AudioURL: url})
	heard.Call(ctx, call(brainwire.ToolTranscribeAudio, fmt.Sprintf(`{"blob_url":%q}`, url)))
	unheard := New(deps, brainwire.Capture{Kind: brainwire.KindVoice, UserID: "u1", AudioURL: url})
	for _, s := range []*Set{heard, unheard} {
		id, err := s.KeepUnresolved(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		item, err := deps.Store.GetInboxItem(ctx, "u1", id)
		if err != nil || item.RawText != "hmm what was it" || item.Source != brainwire.KindVoice || item.Status != brainwire.StatusUnresolved {
			t.Errorf("kept voice capture %+v, %v; want its words", item, err)
		}
	}
}

// A voice capture whose words cannot be had is neither kept nor filed
// with words that are not the person's: the capture ends in a Failure
// that says why, for the phone to try again.
func TestVoiceWithoutItsWordsIsNotKept(t *testing.T) {
	for _, c := range []struct {
		name, code string
		status     int
		body       string
	}{
		{"service down", brainwire.EUpstream, http.StatusServiceUnavailable, `{"error":{"code":"503","message":"Service unavailable"}}`},
		{"credential refused", brainwire.EUpstreamAuth, http.StatusUnauthorized, `{"error":{"code":"401","message":"Access denied"}}`},
		{"gateway page", brainwire.EUpstream, http.StatusBadGateway, "<html><body>502 Bad Gateway at 10.20.30.40</body></html>"},
		{"busy", brainwire.EBusy, http.StatusTooManyRequests, `{"error":{"code":"429","message":"Rate limit is exceeded."}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			deps := newDeps(t)
			url := withAudio(t, &deps, "call the plumber")
			deps.Transcriber = transcriptionServer(t, c.status, c.body)
			capture := brainwire.Capture{Kind: brainwire.KindVoice, UserID: "u1", AudioURL: url}
			res := New(deps, capture).Call(ctx, call(brainwire.ToolTranscribeAudio, fmt.Sprintf(`{"blob_url":%q}`, url)))
			var f *brainwire.Failure
			if !res.IsError || !errors.As(res.Fatal, &f) || f.Code != c.code || strings.Contains(f.Message, "10.20.30.40") {
				t.Fatalf("transcribe_audio: %s, fatal %v; want a Failure with code %s and no page in it", res.Output, res.Fatal, c.code)
			}
			res = New(deps, capture).Call(ctx, call(brainwire.ToolFileCapture, `{"text":"x","bucket":"Admin","confidence":0.9,"status":"classified"}`))
			if !res.IsError || !errors.As(res.Fatal, &f) || f.Code != c.code {
				t.Errorf("file_capture before any transcript: %s, fatal %v", res.Output, res.Fatal)
			}
			id, err := New(deps, capture).KeepUnresolved(ctx, "")
			if id != "" || !errors.As(err, &f) || f.Code != c.code {
				t.Errorf("KeepUnresolved: %q, %v; want a Failure with code %s", id, err, c.code)
			}
			if page, _ := deps.Store.ListInbox(ctx, "u1", brainwire.ListOptions{}); len(page.Items) != 0 {
				t.Errorf("items kept: %+v", page.Items)
			}
		})
	}
}

func TestKeepUnresolvedStoreFailure(t *testing.T) {
	deps := newDeps(t)
	deps.Store.Close()
	id, err := New(deps, brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", Text: "x"}).KeepUnresolved(context.Background(), "")
	if id != "" || err == nil || !strings.Contains(err.Error(), "keeping the unresolved capture") {
		t.Fatalf("KeepUnresolved on a closed store = %q, %v", id, err)
	}
}

// keyClaim claims an Idempotency-Key on deps' store for user u1.
func keyClaim(t *testing.T, deps Deps, token string, at time.Time) brainwire.IdempotencyKey {
	t.Helper()
	k := brainwire.IdempotencyKey{UserID: "u1", Key: "key-1", Fingerprint: "fp", Token: token, State: brainwire.KeyRunning,
		At: at, Until: at.Add(time.Minute), ItemID: "item-of-key-1"}
	got, ok, err := deps.Store.(brainwire.IdempotencyStore).ClaimKey(context.Background(), k)
	if err != nil || !ok {
		t.Fatalf("ClaimKey: %+v, %v, %v", got, ok, err)
	}
	return got
}

// A filing under the request's Idempotency-Key is the key's item, and
// settles the key with what the phone is told of it, in one write.
func TestFilingUnderAKeySettlesIt(t *testing.T) {
	for _, c := range []struct {
		name, args string
		want       brainwire.Replay
	}{
		{"classified", `{"text":"x","bucket":"People","confidence":0.92,"status":"classified"}`,
			brainwire.Replay{Outcome: brainwire.OutcomeClassified, Bucket: "People", Confidence: 0.92}},
		{"misunderstood", `{"text":"x","bucket":"Ideas","confidence":0.2,"status":"misunderstood"}`,
			brainwire.Replay{Outcome: brainwire.OutcomeMisunderstood, Bucket: "Ideas", Confidence: 0.2, Question: brainwire.DefaultQuestion}},
	} {
		t.Run(c.name, func(t *testing.T) {
			deps := newDeps(t)
			k := keyClaim(t, deps, "t1", now)
			capture := brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", ThreadID: "thread-1", RunID: "run-1", Text: "Call mom"}
			set := New(deps, capture)
			set.FileUnder(k)
			res := set.Call(context.Background(), call(brainwire.ToolFileCapture, c.args))
			if res.IsError || res.Filed.ItemID != k.ItemID || !set.KeySettled() {
				t.Fatalf("filing: %+v (%s), settled %v; want item %s", res.Filed, res.Output, set.KeySettled(), k.ItemID)
			}
			got, claimed, err := deps.Store.(brainwire.IdempotencyStore).ClaimKey(context.Background(),
				brainwire.IdempotencyKey{UserID: "u1", Key: "key-1", Fingerprint: "fp", Token: "t2", At: now.Add(time.Hour), Until: now.Add(2 * time.Hour)})
			want := c.want
			want.Kind, want.ThreadID, want.RunID, want.InboxItemID, want.UpstreamThreadID = brainwire.KindText, "thread-1", "run-1", k.ItemID, "thread_up"
			if err != nil || claimed || got.State != brainwire.KeyDone || got.Replay == nil || *got.Replay != want {
				t.Fatalf("a repeat finds %+v (replay %+v), claimed %v, %v; want done, replaying %+v", got, got.Replay, claimed, err, want)
			}
			// And it is what the phone is told (the adapter's reading).
			if told := brainwire.ReplayOf(capture, res.Filed.Result("thread_up")); *told != want {
				t.Errorf("the phone is told %+v, the key replays %+v", *told, want)
			}
		})
	}
}

// A run whose claim lapsed and was taken over by a repeat of its request
// files nothing: the repeat files the capture. The failure ends the run.
func TestFilingUnderAKeyTakenOverIsFatal(t *testing.T) {
	deps := newDeps(t)
	first := keyClaim(t, deps, "t1", now)
	keyClaim(t, deps, "t2", first.Until)
	set := New(deps, brainwire.Capture{Kind: brainwire.KindText, UserID: "u1", Text: "Call mom"})
	set.FileUnder(first)
	res := set.Call(context.Background(), call(brainwire.ToolFileCapture, `{"text":"x","bucket":"People","confidence":0.92,"status":"classified"}`))
	if !res.IsError || !errors.Is(res.Fatal, brainwire.ErrKeyTakenOver) || res.Superseded != "" {
		t.Fatalf("filing under a key taken over: %+v, want a fatal error", res)
	}
	page, err := deps.Store.ListInbox(context.Background(), "u1", brainwire.ListOptions{})
	if err != nil || len(page.Items) != 0 {
		t.Errorf("inbox: %v, %v; want empty", page.Items, err)
	}
	if id, err := set.KeepUnresolved(context.Background(), "thread_up"); id != "" || !errors.Is(err, brainwire.ErrKeyTakenOver) {
		t.Errorf("keeping it unresolved: %q, %v; want ErrKeyTakenOver", id, err)
	}
}
