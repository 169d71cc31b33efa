package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/azureblob"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/internal/npmtest"
	"github.com/brainwire/brainwire/internal/testaudio"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/transcription"
)

// transcriptionAPI answers like Azure OpenAI's audio/transcriptions: it
// parses the multipart request and returns the configured transcript.
type transcriptionAPI struct {
	srv        *httptest.Server
	transcript string
	mu         sync.Mutex
	received   [][]byte
}

func newTranscriptionAPI(t *testing.T, transcript string) (*transcriptionAPI, *transcription.Client) {
	api := &transcriptionAPI{transcript: transcript}
	api.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("api-key") != "test-key" || !strings.HasSuffix(r.URL.Path, "/openai/deployments/whisper/audio/transcriptions") {
			http.Error(w, `{"error":{"code":"401","message":"Access denied"}}`, http.StatusUnauthorized)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil || r.FormValue("response_format") != "json" {
			http.Error(w, `{"error":{"code":"invalid_request","message":"no file"}}`, http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(f)
		api.mu.Lock()
		api.received = append(api.received, b)
		api.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"text":%q}`, api.transcript)
	}))
	t.Cleanup(api.srv.Close)
	c, err := transcription.New(transcription.Config{Endpoint: api.srv.URL, Deployment: "whisper", APIKey: "test-key"}, api.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return api, c
}

// azurite starts Azurite once per test and returns a store on a fresh
// container.
func azurite(t *testing.T) *azureblob.Store {
	t.Helper()
	srv := npmtest.Start(t, "azurite-blob", "--blobHost", "127.0.0.1", "--blobPort", "{port}", "--location", "{dir}",
		"--skipApiVersionCheck", "--loose", "--disableTelemetry", "--silent")
	cfg, err := azureblob.ConfigFromConnectionString(azureblob.DevConnectionString, "voice")
	if err != nil {
		t.Fatal(err)
	}
	cfg.AccountURL = "http://" + srv.Addr + "/devstoreaccount1"
	st, err := azureblob.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureContainer(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

func voiceBody(t *testing.T, filename, contentType string, audio []byte) (string, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename))
	h.Set("Content-Type", contentType)
	w, _ := mw.CreatePart(h)
	_, _ = w.Write(audio)
	mw.Close()
	return mw.FormDataContentType(), buf.String()
}

// assertGone checks the capture's audio no longer exists.
func assertGone(t *testing.T, blobs *azureblob.Store, url string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rc, _, err := blobs.Open(context.Background(), url)
		if brainwire.ErrorCode(err) == brainwire.ENotFound {
			return
		}
		if err == nil {
			rc.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("audio %s still there (%v)", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestVoiceCaptureEndToEnd(t *testing.T) {
	audio := testaudio.WAV(t, "Call mom about her birthday on Sunday")
	blobs := azurite(t)
	api, tr := newTranscriptionAPI(t, "Call mom about her birthday on Sunday.")
	h := newHarness(t, nil, withSimulator(t), withBlobs(blobs), withTranscriber(tr))

	for _, path := range []string{"/api/capture/voice", "/api/capture"} {
		t.Run(path, func(t *testing.T) {
			before := len(h.inbox(testUser))
			ct, body := voiceBody(t, "note.wav", "audio/wav", audio)
			frames := h.readStream(h.post(path, ct, body))
			var types []string
			for _, f := range frames {
				types = append(types, f.Data["type"].(string))
			}
			if strings.Join(types, ",") != "STEP_START,STEP_END,CLASSIFIED,COMPLETE" ||
				frames[0].Data["stepName"] != "Processing" || frames[1].Data["stepName"] != "Processing" {
				t.Fatalf("stream:\n%s", payloads(frames))
			}
			value := frames[2].Data["value"].(map[string]any)
			if value["bucket"] != "People" {
				t.Fatalf("outcome %v", value)
			}
			item, err := h.store.GetInboxItem(context.Background(), testUser, value["inboxItemId"].(string))
			if err != nil || item.Source != brainwire.KindVoice || item.RawText != "Call mom about her birthday on Sunday." {
				t.Fatalf("item %+v, %v", item, err)
			}
			if n := len(h.inbox(testUser)); n != before+1 {
				t.Fatalf("%d new items", n-before)
			}
			api.mu.Lock()
			got := api.received[len(api.received)-1]
			api.mu.Unlock()
			if !bytes.Equal(got, audio) {
				t.Fatalf("transcription got %d bytes, uploaded %d", len(got), len(audio))
			}
		})
	}
	// Both uploads (ids come from the counter: thread, run, blob, then
	// the filing's two) are gone.
	for _, id := range []string{"id3", "id8"} {
		assertGone(t, blobs, fmt.Sprintf("%s/voice-%s.wav", blobs.URL(), id))
	}
}

// voiceScript is an upstream that asks for transcribe_audio first.
func voiceRun(r ft.Run, tail ...ft.Event) []ft.Event {
	evs := []ft.Event{r.ThreadCreated(), r.Created(), r.Queued(), r.InProgress()}
	return append(evs, tail...)
}

func TestVoiceAudioIsDeletedWhenTheRunFails(t *testing.T) {
	audio := testaudio.WAV(t, "Pay the water bill")
	blobs := azurite(t)
	_, tr := newTranscriptionAPI(t, "Pay the water bill")
	r := ft.NewRun(upThread, upRun)
	h := newHarness(t, []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(voiceRun(r, r.Failed("server_error", "model overloaded"), ft.Done())...))},
		withBlobs(blobs), withTranscriber(tr))
	ct, body := voiceBody(t, "bill.wav", "audio/wav", audio)
	frames := h.readStream(h.post("/api/capture/voice", ct, body))
	if got := payloads(frames); !strings.Contains(got, `"type":"ERROR"`) || !strings.HasPrefix(got, `{"type":"STEP_START","stepName":"Processing"}`) {
		t.Fatalf("stream:\n%s", got)
	}
	// The agent was told where the audio is; that audio is now gone.
	msg := fmt.Sprint(h.up.Find("POST /threads/runs")[0].Body["thread"])
	url := blobs.URL() + "/voice-id3.wav"
	if !strings.Contains(msg, "audio: "+url) {
		t.Fatalf("run message does not carry the audio URL %s: %s", url, msg)
	}
	assertGone(t, blobs, url)
}

func TestVoiceAudioIsDeletedWhenTheClientDisconnects(t *testing.T) {
	audio := testaudio.WAV(t, "Idea for a garden app")
	blobs := azurite(t)
	_, tr := newTranscriptionAPI(t, "Idea for a garden app")
	r := ft.NewRun(upThread, upRun)
	h := newHarness(t, []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(voiceRun(r, ft.Hang())...))},
		withBlobs(blobs), withTranscriber(tr))
	ct, body := voiceBody(t, "idea.wav", "audio/wav", audio)
	h.disconnectAfterStart("/api/capture/voice", ct, body, "STEP_START")
	// The agent was told where the audio is; that audio is now gone.
	url := blobs.URL() + "/voice-id3.wav"
	if msg := fmt.Sprint(h.up.Find("POST /threads/runs")[0].Body["thread"]); !strings.Contains(msg, "audio: "+url) {
		t.Fatalf("run message does not carry the audio URL %s: %s", url, msg)
	}
	assertGone(t, blobs, url)
}

// stubTranscriber stands in for a configured transcription service.
type stubTranscriber struct{ text string }

func (s stubTranscriber) Transcribe(_ context.Context, audio io.Reader, _, _ string) (string, error) {
	_, _ = io.Copy(io.Discard, audio)
	return s.text, nil
}

func TestVoiceRejectsBadUploadsBeforeStreaming(t *testing.T) {
	dir := t.TempDir()
	blobs, err := localblob.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, nil, withMaxAudio(1024), withBlobs(blobs), withTranscriber(stubTranscriber{}))
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt ")
	cases := []struct {
		name        string
		contentType string
		body        string
		status      int
		detail      string
	}{
		{"not multipart", "application/octet-stream", string(wav), 415, "multipart/form-data"},
		{"unsupported type", "", "", 400, "unsupported audio format"},
		{"too large", "", "", 413, "over 1024 bytes"},
		{"no file part", "", "", 400, "file part"},
		{"empty file", "", "", 400, "empty"},
		{"broken multipart", "multipart/form-data; boundary=xyz", "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nabc", 400, "malformed multipart"},
		{"broken multipart after the audio's start", "multipart/form-data; boundary=xyz", "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\n" + string(wav) + "abc", 400, "malformed multipart"},
		{"two file parts", "", "", 400, "only one file part"},
		{"an ELF binary named .wav", "", "", 415, "not WAV audio"},
		{"MP3 audio named .wav", "", "", 415, "not WAV audio"},
		{"text named .ogg", "", "", 415, "not OGG audio"},
		{"a few bytes named .m4a", "", "", 415, "not M4A audio"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct, body := c.contentType, c.body
			switch c.name {
			case "unsupported type":
				ct, body = voiceBody(t, "notes.txt", "text/plain", []byte("hello"))
			case "too large":
				ct, body = voiceBody(t, "big.wav", "audio/wav", append(wav, bytes.Repeat([]byte{1}, 2048)...))
			case "two file parts":
				var buf bytes.Buffer
				mw := multipart.NewWriter(&buf)
				for range 2 {
					fw, _ := mw.CreateFormFile("file", "a.wav")
					fw.Write(wav)
				}
				mw.Close()
				ct, body = mw.FormDataContentType(), buf.String()
			case "an ELF binary named .wav":
				ct, body = voiceBody(t, "note.wav", "audio/wav", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00"))
			case "MP3 audio named .wav":
				ct, body = voiceBody(t, "note.wav", "audio/wav", []byte("ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb\x90\x00"))
			case "text named .ogg":
				ct, body = voiceBody(t, "note.ogg", "audio/ogg", []byte("just some text, not Ogg at all"))
			case "a few bytes named .m4a":
				ct, body = voiceBody(t, "note.m4a", "", []byte("ftyp"))
			case "no file part":
				var buf bytes.Buffer
				mw := multipart.NewWriter(&buf)
				_ = mw.WriteField("thread_id", "t1")
				mw.Close()
				ct, body = mw.FormDataContentType(), buf.String()
			case "empty file":
				ct, body = voiceBody(t, "empty.wav", "audio/wav", nil)
			}
			r := h.do("POST", "/api/capture/voice", testKey, "bearer", ct, body)
			if r.status != c.status || !strings.Contains(r.detail, c.detail) {
				t.Fatalf("got %d %s, want %d with %q", r.status, r.body, c.status, c.detail)
			}
		})
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls for rejected uploads", n)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Fatalf("rejected uploads left %d files in the blob store", len(files))
	}
}

// A voice capture whose audio cannot be transcribed (the service down,
// refusing brainwire's credential, a gateway's page, unreachable) ends in
// ERROR with a code the app can act on, keeps no item, and gives its
// Idempotency-Key back: the phone's repeat with the same audio, once the
// service is back, transcribes it and files the person's words.
func TestVoiceCaptureWhoseTranscriptionFails(t *testing.T) {
	audio := testaudio.WAV(t, "Call the plumber about the leak")
	for _, c := range []struct {
		name, code, message string
		status              int // 0: the service cannot be reached
		body                string
	}{
		{"503", brainwire.EUpstream, "The transcription service failed: Service unavailable, try again", 503,
			`{"error":{"code":"503","message":"Service unavailable, try again"}}`},
		{"401", brainwire.EUpstreamAuth, "brainwire could not sign in to the transcription service", 401,
			`{"error":{"code":"401","message":"Access denied due to invalid subscription key"}}`},
		{"502 page", brainwire.EUpstream, "The transcription service failed: it answered 502 Bad Gateway", 502,
			"<html><head><title>502 Bad Gateway</title></head><body>nginx at gw-internal-7.corp (10.20.30.40)</body></html>"},
		{"unreachable", brainwire.EUnavailable, "The transcription service could not be reached", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var down atomic.Bool
			down.Store(true)
			svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if down.Load() {
					w.WriteHeader(c.status)
					io.WriteString(w, c.body)
					return
				}
				_, _, _ = r.FormFile("file")
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"text":"Call the plumber about the leak."}`)
			}))
			t.Cleanup(svc.Close)
			endpoint := svc.URL
			if c.status == 0 {
				// Nothing listens there.
				gone := httptest.NewServer(http.NotFoundHandler())
				endpoint = gone.URL
				gone.Close()
			}
			tr, err := transcription.New(transcription.Config{Endpoint: endpoint, Deployment: "whisper", APIKey: "test-key"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			blobs, _ := localblob.New(t.TempDir())
			h := newHarness(t, nil, withSimulator(t), withBlobs(blobs), withTranscriber(tr))

			ct, body := voiceBody(t, "note.wav", "audio/wav", audio)
			const key = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
			first := h.sendKeyed(testKey, "/api/capture/voice", ct, body, key)
			want := fmt.Sprintf(`{"type":"ERROR","message":%q,"code":%q}`, c.message, c.code)
			if first.status != http.StatusOK || !strings.Contains(first.body, want) || strings.Contains(first.body, "10.20.30.40") {
				t.Fatalf("the capture: %d\n%s\nwant %s", first.status, first.body, want)
			}
			if items := h.inbox(testUser); len(items) != 0 {
				t.Fatalf("items kept of a capture whose words were never had: %+v", items)
			}
			if c.status == 0 {
				return // the service stays unreachable
			}
			down.Store(false)
			again := h.sendKeyed(testKey, "/api/capture/voice", ct, body, key)
			if again.replayed != "" || !strings.Contains(again.body, `"inboxItemId":"`) || strings.Contains(again.body, `"ERROR"`) {
				t.Fatalf("the repeat once the service is back: %d %q\n%s\nwant it run afresh", again.status, again.replayed, again.body)
			}
			it, err := h.store.GetInboxItem(context.Background(), testUser, itemID(t, again.body))
			if err != nil || it.RawText != "Call the plumber about the leak." {
				t.Errorf("the item: %+v, %v; want the person's words", it, err)
			}
		})
	}
}
