package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
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

// keptBlobs is a blob store that keeps the URLs of the audio stored.
type keptBlobs struct {
	*azureblob.Store
	mu   sync.Mutex
	urls []string
}

func (b *keptBlobs) Put(ctx context.Context, name, contentType string, r io.Reader) (string, error) {
	url, err := b.Store.Put(ctx, name, contentType, r)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.urls = append(b.urls, url)
	return url, err
}

// A voice capture on every protocol's way in for audio: the audio reaches
// the transcription service whole, the person's words are filed as a voice
// capture, and the audio is deleted once the capture is over.
func TestVoiceCaptureEndToEnd(t *testing.T) {
	audio := testaudio.WAV(t, "Call mom about her birthday on Sunday")
	blobs := &keptBlobs{Store: azurite(t)}
	api, tr := newTranscriptionAPI(t, "Call mom about her birthday on Sunday.")
	h := newHarness(t, nil, withSimulator(t), withBlobs(blobs), withTranscriber(tr))
	ct, form := voiceBody(t, "note.wav", "audio/wav", audio)
	inline := runInput([]map[string]any{{"type": "audio", "source": map[string]string{
		"type": "data", "value": base64.StdEncoding.EncodeToString(audio), "mimeType": "audio/wav"}}}, `{}`, `{}`)
	for _, c := range []struct {
		p              protocol
		path, ct, body string
	}{
		{protocols[0], "/api/capture/voice", ct, form},
		{protocols[0], "/api/capture", ct, form},
		{protocols[1], "/api/voice-capture", ct, form},
		{protocols[2], "/api/agui", "application/json", inline},
	} {
		t.Run(c.path, func(t *testing.T) {
			r := h.do("POST", c.path, testKey, "bearer", c.ct, c.body)
			if e := c.p.ending(t, r.body); e.outcome != "classified" || e.bucket != "People" || !strings.Contains(r.body, `"stepName":"Processing"`) {
				t.Fatalf("%v:\n%s", e, r.body)
			}
			item, err := h.store.GetInboxItem(context.Background(), testUser, itemID(t, r.body))
			if err != nil || item.Source != brainwire.KindVoice || item.RawText != "Call mom about her birthday on Sunday." {
				t.Fatalf("item %+v, %v", item, err)
			}
			api.mu.Lock()
			got := api.received[len(api.received)-1]
			api.mu.Unlock()
			if !bytes.Equal(got, audio) {
				t.Fatalf("transcription got %d bytes, uploaded %d", len(got), len(audio))
			}
		})
	}
	if len(blobs.urls) != 4 {
		t.Errorf("%d uploads stored, want 4", len(blobs.urls))
	}
	for _, url := range blobs.urls {
		assertGone(t, blobs.Store, url)
	}
}

// The agent is told where a voice capture's audio is, and the audio is
// gone once the capture is, also when its run fails or its client goes
// away.
func TestVoiceAudioIsDeletedWhenTheCaptureFails(t *testing.T) {
	r := ft.NewRun(upThread, upRun)
	for name, tail := range map[string][]ft.Event{
		"the run fails":        {r.Failed("server_error", "model overloaded"), ft.Done()},
		"the client goes away": {ft.Hang()},
	} {
		t.Run(name, func(t *testing.T) {
			blobs := azurite(t)
			_, tr := newTranscriptionAPI(t, "Pay the water bill")
			h := newHarness(t, []ft.Call{ft.Expect("POST /threads/runs", ft.Stream(append([]ft.Event{r.ThreadCreated(), r.Created(), r.Queued(), r.InProgress()}, tail...)...))},
				withBlobs(blobs), withTranscriber(tr))
			ct, body := voiceBody(t, "bill.wav", "audio/wav", testaudio.WAV(t, "Pay the water bill"))
			if len(tail) == 1 {
				h.disconnectAfterStart("/api/capture/voice", ct, body, "STEP_START")
			} else if got := payloads(h.readStream(h.post("/api/capture/voice", ct, body))); !strings.Contains(got, `"type":"ERROR"`) {
				t.Fatalf("stream:\n%s", got)
			}
			url := blobs.URL() + "/voice-id3.wav"
			if msg := fmt.Sprint(h.up.Find("POST /threads/runs")[0].Body["thread"]); !strings.Contains(msg, "audio: "+url) {
				t.Fatalf("run message does not carry the audio URL %s: %s", url, msg)
			}
			assertGone(t, blobs, url)
		})
	}
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
	file := func(name, ctype string, audio []byte) [2]string {
		ct, body := voiceBody(t, name, ctype, audio)
		return [2]string{ct, body}
	}
	// form writes a form of fields and files (a name ending in .wav).
	form := func(parts ...string) [2]string {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for i := 0; i < len(parts); i += 2 {
			if strings.HasSuffix(parts[i+1], ".wav") {
				fw, _ := mw.CreateFormFile(parts[i], parts[i+1])
				fw.Write(wav)
			} else {
				mw.WriteField(parts[i], parts[i+1])
			}
		}
		mw.Close()
		return [2]string{mw.FormDataContentType(), buf.String()}
	}
	const broken = "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\n"
	for _, c := range []struct {
		name    string
		request [2]string // Content-Type, body
		status  int
		detail  string
	}{
		{"not multipart", [2]string{"application/octet-stream", string(wav)}, 415, "multipart/form-data"},
		{"unsupported type", file("notes.txt", "text/plain", []byte("hello")), 400, "unsupported audio format"},
		{"too large", file("big.wav", "audio/wav", append(wav, bytes.Repeat([]byte{1}, 2048)...)), 413, "over 1024 bytes"},
		{"no file part", form("thread_id", "t1"), 400, "file part"},
		{"empty file", file("empty.wav", "audio/wav", nil), 400, "empty"},
		{"broken multipart", [2]string{"multipart/form-data; boundary=xyz", broken + "abc"}, 400, "malformed multipart"},
		{"broken multipart after the audio's start", [2]string{"multipart/form-data; boundary=xyz", broken + string(wav) + "abc"}, 400, "malformed multipart"},
		{"two file parts", form("file", "a.wav", "file", "b.wav"), 400, "only one file part"},
		{"an ELF binary named .wav", file("note.wav", "audio/wav", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00")), 415, "not WAV audio"},
		{"MP3 audio named .wav", file("note.wav", "audio/wav", []byte("ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb\x90\x00")), 415, "not WAV audio"},
		{"text named .ogg", file("note.ogg", "audio/ogg", []byte("just some text, not Ogg at all")), 415, "not OGG audio"},
		{"a few bytes named .m4a", file("note.m4a", "", []byte("ftyp")), 415, "not M4A audio"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.do("POST", "/api/capture/voice", testKey, "bearer", c.request[0], c.request[1])
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
