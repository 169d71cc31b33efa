package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/protocol/agui/aguitest"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/transcription"
)

// The request decoding of the AG-UI and legacy routes, fuzzed through the
// whole handler: whatever the body, the answer is a stream (2xx) or a JSON
// error (4xx), never a 5xx or a panic, and a 4xx changes nothing: no
// document written, no audio left behind. Seeds run with the tests; fuzz
// with e.g. go test -run '^$' -fuzz FuzzAGUIRequest ./server

// writeCounter counts the writes the store made (a failed write is
// atomic: it wrote nothing).
type writeCounter struct {
	brainwire.Store
	writes atomic.Int64
}

func (s *writeCounter) count(err error) {
	if err == nil {
		s.writes.Add(1)
	}
}

func (s *writeCounter) File(ctx context.Context, f brainwire.Filing) (brainwire.InboxItem, error) {
	it, err := s.Store.File(ctx, f)
	s.count(err)
	return it, err
}

func (s *writeCounter) Recategorize(ctx context.Context, userID, id, bucket, newRecordID, classifiedBy string, now time.Time) (brainwire.InboxItem, error) {
	it, err := s.Store.Recategorize(ctx, userID, id, bucket, newRecordID, classifiedBy, now)
	s.count(err)
	return it, err
}

func (s *writeCounter) DeleteInboxItem(ctx context.Context, userID, id string) error {
	err := s.Store.DeleteInboxItem(ctx, userID, id)
	s.count(err)
	return err
}

// blobCounter counts the audio files stored and not yet deleted.
type blobCounter struct {
	brainwire.BlobStore
	live atomic.Int64
}

func (b *blobCounter) Put(ctx context.Context, name, contentType string, r io.Reader) (string, error) {
	url, err := b.BlobStore.Put(ctx, name, contentType, r)
	if err == nil {
		b.live.Add(1)
	}
	return url, err
}

func (b *blobCounter) Delete(ctx context.Context, url string) error {
	err := b.BlobStore.Delete(ctx, url)
	if err == nil {
		b.live.Add(-1)
	}
	return err
}

// fuzzServer is a real server (simulator upstream, SQLite, local audio, a
// transcription service) whose writes are counted.
type fuzzServer struct {
	handler http.Handler
	store   *writeCounter
	blobs   *blobCounter
}

func newFuzzServer(f *testing.F) *fuzzServer {
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	f.Cleanup(sim.Close)
	client, err := foundry.NewClient(sim.URL+simulator.ProjectPath, &http.Client{Transport: foundry.NewStaticTokenTransport("simulator", nil)})
	if err != nil {
		f.Fatal(err)
	}
	tapi := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"text":"Call mom about her birthday"}`)
	}))
	f.Cleanup(tapi.Close)
	tr, err := transcription.New(transcription.Config{Endpoint: tapi.URL, Deployment: "whisper", APIKey: "k"}, tapi.Client())
	if err != nil {
		f.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	local, err := localblob.New(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	fs := &fuzzServer{store: &writeCounter{Store: st}, blobs: &blobCounter{BlobStore: local}}
	// Items for follow-ups and picked buckets to find.
	for id, status := range map[string]string{"m1": brainwire.StatusMisunderstood, "p1": brainwire.StatusPending} {
		if _, err := st.File(context.Background(), brainwire.Filing{UserID: testUser, NewInboxID: id, NewRecordID: "rec-" + id,
			RawText: "text of " + id, Source: brainwire.KindText, Status: status,
			Classification:  brainwire.Classification{Bucket: "Ideas", Confidence: 0.4, ClassifiedAt: fixedNow},
			FoundryThreadID: "thread_" + id, Now: fixedNow}); err != nil {
			f.Fatal(err)
		}
	}
	var n atomic.Int64
	s, err := server.New(server.Config{
		Keys:          server.Keys{testKey: testUser},
		Provider:      foundry.NewProvider(client, simulator.DefaultAgentID),
		Store:         fs.store,
		Blobs:         fs.blobs,
		Transcriber:   tr,
		MaxAudioBytes: 64 << 10,
		RunTimeout:    20 * time.Second,
		NewID:         func() string { return fmt.Sprintf("fz%d", n.Add(1)) },
	})
	if err != nil {
		f.Fatal(err)
	}
	fs.handler = s.Handler()
	return fs
}

// check posts body to path and holds the answer to the rule above.
func (fs *fuzzServer) check(t *testing.T, path, contentType string, body []byte) {
	writes, blobs := fs.store.writes.Load(), fs.blobs.live.Load()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	fs.handler.ServeHTTP(rec, req)
	out := rec.Body.String()
	if n := fs.blobs.live.Load(); n != blobs {
		t.Fatalf("%d audio files left behind (status %d)", n-blobs, rec.Code)
	}
	switch {
	case rec.Code == http.StatusOK:
		if rec.Header().Get("Content-Type") != "text/event-stream" {
			t.Fatalf("200 with Content-Type %q", rec.Header().Get("Content-Type"))
		}
		frames, err := aguitest.Frames(out)
		if err != nil {
			t.Fatal(err)
		}
		if path == "/api/agui" {
			err = aguitest.Verify(frames)
		} else if last := frames[len(frames)-1]; !strings.Contains(last, `"type":"RUN_FINISHED"`) && !strings.Contains(last, `"type":"RUN_ERROR"`) {
			err = fmt.Errorf("v1 stream ends with %s", last)
		}
		if err != nil {
			t.Fatalf("stream: %v\n%s", err, out)
		}
	case rec.Code >= 400 && rec.Code < 500:
		var e struct{ Detail string }
		if rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal([]byte(out), &e) != nil || e.Detail == "" {
			t.Fatalf("%d is not a JSON error: %q", rec.Code, out)
		}
		if n := fs.store.writes.Load(); n != writes {
			t.Fatalf("%d: %q, but %d store writes", rec.Code, e.Detail, n-writes)
		}
	default:
		t.Fatalf("status %d: %s", rec.Code, out)
	}
}

func fuzzJSONRoute(f *testing.F, path string, seeds ...string) {
	for _, s := range append(seeds, ``, `null`, `[]`, `{}`, `{"`, "\x00\xff", `{"a":1}{"b":2}`) {
		f.Add([]byte(s))
	}
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) { fs.check(t, path, "application/json", body) })
}

func FuzzAGUIRequest(f *testing.F) {
	wav := base64.StdEncoding.EncodeToString([]byte("RIFF\x24\x00\x00\x00WAVEfmt "))
	fuzzJSONRoute(f, "/api/agui",
		runInput("Call mom about her birthday", `{}`, `{"reasoning":true}`),
		runInput([]map[string]string{{"type": "text", "text": "Pay the bill #no-tool"}}, `null`, `[]`),
		runInput("hmm #fail", `{}`, `{}`),
		runInput("I meant my sister", `{"capture":{"outcome":"misunderstood","inboxItemId":"m1","followUpRound":0}}`, `{}`),
		runInput("x", `{"capture":{"outcome":"misunderstood","inboxItemId":"m1","followUpRound":7}}`, `{}`),
		runInput([]map[string]any{{"type": "audio", "source": map[string]string{"type": "data", "value": wav, "mimeType": "audio/wav"}}}, `{}`, `{}`),
		runInput([]map[string]any{{"type": "audio", "source": map[string]string{"type": "url", "value": "http://x/"}}}, `{}`, `{}`),
		`{"threadId":"t","runId":"r","messages":[{"role":"user","content":"`+strings.Repeat("a", 20000)+`"}]}`,
	)
}

func FuzzLegacyCaptureRequest(f *testing.F) {
	fuzzJSONRoute(f, "/api/ag-ui",
		`{"messages":[{"id":"m","role":"user","content":"Call mom"}],"thread_id":"thread-1","run_id":"run-1"}`,
		`{"messages":[{"content":"Pay the bill #fail"}],"state":{}}`,
		`{"messages":[{"role":"user","content":["x"]}]}`,
		`{"messages":[{"role":"user","content":"x"}],"thread_id":"a b"}`,
	)
}

func FuzzLegacyFollowUpRequest(f *testing.F) {
	fuzzJSONRoute(f, "/api/ag-ui/follow-up",
		`{"inbox_item_id":"m1","follow_up_text":"I meant my sister","follow_up_round":1}`,
		`{"inbox_item_id":"m1","follow_up_text":"x"}`,
		`{"inbox_item_id":"p1","follow_up_text":"x","follow_up_round":2}`,
		`{"inbox_item_id":"nope","follow_up_text":"x","follow_up_round":1}`,
		`{"inbox_item_id":"../m1","follow_up_text":"x","follow_up_round":1}`,
	)
}

func FuzzLegacyRespondRequest(f *testing.F) {
	fuzzJSONRoute(f, "/api/ag-ui/respond",
		`{"thread_id":"thread-1","response":"Projects","inbox_item_id":"p1"}`,
		`{"thread_id":"thread-1","response":"Misc","inbox_item_id":"p1"}`,
		`{"response":"People","inbox_item_id":"nope"}`,
		`{"thread_id":"a\u0000b","response":"People","inbox_item_id":"p1"}`,
	)
}

func FuzzLegacyVoiceRequest(f *testing.F) {
	const boundary = "fuzz-boundary"
	part := func(name, ctype, data string) string {
		return "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + name + "\"\r\nContent-Type: " + ctype + "\r\n\r\n" + data + "\r\n"
	}
	for _, s := range []string{
		part("voice-capture.m4a", "audio/m4a", "....ftypM4A audio") + "--" + boundary + "--\r\n",
		part("a.wav", "audio/wav", "RIFF") + part("b.wav", "audio/wav", "RIFF") + "--" + boundary + "--\r\n",
		part("notes.txt", "text/plain", "hello") + "--" + boundary + "--\r\n",
		part("empty.wav", "audio/wav", "") + "--" + boundary + "--\r\n",
		"--" + boundary + "\r\nContent-Disposition: form-data; name=\"thread_id\"\r\n\r\nt 1\r\n" + part("a.wav", "audio/wav", "RIFF") + "--" + boundary + "--\r\n",
		"--" + boundary + "\r\n\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fs.check(t, "/api/voice-capture", "multipart/form-data; boundary="+boundary, body)
	})
}
