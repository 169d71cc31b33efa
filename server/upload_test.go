package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/replay"
	"github.com/brainwire/brainwire/server"
)

// watchedBlobs is a local blob store that reports how much of an upload
// it has received while it is still receiving it.
type watchedBlobs struct {
	*localblob.Store
	received chan int64 // every read's running total, dropped when nobody listens
	puts     atomic.Int64
}

func newWatchedBlobs(t *testing.T) *watchedBlobs {
	st, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &watchedBlobs{Store: st, received: make(chan int64, 1)}
}

func (w *watchedBlobs) Put(ctx context.Context, name, contentType string, r io.Reader) (string, error) {
	w.puts.Add(1)
	return w.Store.Put(ctx, name, contentType, &countingReader{r: r, report: w.received})
}

func (w *watchedBlobs) stored(t *testing.T) []string {
	t.Helper()
	files, err := os.ReadDir(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	return names
}

type countingReader struct {
	r      io.Reader
	n      int64
	report chan int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	// The watcher wants the latest count: a stale one still waiting is
	// replaced, or a fast upload's last count would be dropped behind it.
	select {
	case <-c.report:
	default:
	}
	select {
	case c.report <- c.n:
	default: // another upload's count got there first
	}
	return n, err
}

// pipedUpload is a voice upload whose body the test writes while the
// server reads it.
type pipedUpload struct {
	w    *io.PipeWriter
	mw   *multipart.Writer
	file io.Writer
	resp chan *http.Response
	err  chan error
}

func startUpload(t *testing.T, h *harness, filename string) *pipedUpload {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/api/capture/voice", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+testKey)
	u := &pipedUpload{w: pw, mw: mw, resp: make(chan *http.Response, 1), err: make(chan error, 1)}
	go func() {
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			u.err <- err
			return
		}
		u.resp <- resp
	}()
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", multipart.FileContentDisposition("file", filename))
	hdr.Set("Content-Type", "audio/wav")
	fw, err := mw.CreatePart(hdr)
	if err != nil {
		t.Fatal(err)
	}
	u.file = fw
	t.Cleanup(func() { pw.CloseWithError(io.ErrClosedPipe) })
	return u
}

func (u *pipedUpload) write(t *testing.T, b []byte) {
	t.Helper()
	if _, err := u.file.Write(b); err != nil {
		t.Fatalf("writing the upload: %v", err)
	}
}

func (u *pipedUpload) finish(t *testing.T) {
	t.Helper()
	if err := u.mw.Close(); err != nil {
		t.Fatal(err)
	}
	u.w.Close()
}

func (u *pipedUpload) response(t *testing.T) *http.Response {
	t.Helper()
	select {
	case resp := <-u.resp:
		return resp
	case err := <-u.err:
		t.Fatalf("upload: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no answer to the upload")
	}
	return nil
}

// bigWAV is a WAV file of n bytes of silence and more.
func bigWAV(n int) []byte { return replay.SilentWAV(n / 2) }

// The audio goes on to the blob store as it arrives: the store has most of
// the first half before the second half is even sent.
func TestVoiceUploadStreamsToTheBlobStore(t *testing.T) {
	blobs := newWatchedBlobs(t)
	h := newHarness(t, nil, withSimulator(t), withBlobs(blobs), withTranscriber(stubTranscriber{"Call mom about her birthday"}))
	audio := bigWAV(8 << 20)
	half := len(audio) / 2
	u := startUpload(t, h, "note.wav")
	u.write(t, audio[:half])
	deadline := time.After(30 * time.Second)
	for got := int64(0); got < int64(half)-(1<<20); {
		select {
		case got = <-blobs.received:
		case err := <-u.err:
			t.Fatalf("upload: %v", err)
		case <-deadline:
			t.Fatalf("the blob store had %d bytes of the %d sent: the upload is held back until it is whole", got, half)
		}
	}
	u.write(t, audio[half:])
	u.finish(t)
	resp := u.response(t)
	frames := h.readStream(resp)
	if got := payloads(frames); !strings.Contains(got, `"type":"CLASSIFIED"`) {
		t.Fatalf("stream:\n%s", got)
	}
	if names := blobs.stored(t); len(names) != 0 {
		t.Errorf("the audio outlived its capture: %v", names)
	}
}

// Beyond the bound, an upload is refused at once with 503 and Retry-After,
// and nothing of it is read or stored; a slot frees when an upload has
// arrived.
func TestVoiceUploadsAreBounded(t *testing.T) {
	blobs := newWatchedBlobs(t)
	h := newHarness(t, nil, withSimulator(t), withBlobs(blobs), withTranscriber(stubTranscriber{"Call mom about her birthday"}),
		func(c *server.Config) { c.MaxUploads = 1 })
	audio := bigWAV(1 << 20)
	first := startUpload(t, h, "first.wav")
	first.write(t, audio[:len(audio)/2])
	select {
	case <-blobs.received:
	case err := <-first.err:
		t.Fatalf("first upload: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first upload never reached the blob store")
	}

	ct, body := voiceBody(t, "second.wav", "audio/wav", audio)
	resp := h.post("/api/capture/voice", ct, body)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var d struct{ Detail string }
	_ = json.Unmarshal(b, &d)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" || !strings.Contains(d.Detail, "too many voice uploads") {
		t.Fatalf("second upload while the first is arriving: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if n := blobs.puts.Load(); n != 1 {
		t.Errorf("%d uploads reached the blob store, want only the first", n)
	}

	first.write(t, audio[len(audio)/2:])
	first.finish(t)
	if got := payloads(h.readStream(first.response(t))); !strings.Contains(got, `"type":"CLASSIFIED"`) {
		t.Fatalf("first upload's stream:\n%s", got)
	}
	if got := payloads(h.readStream(h.post("/api/capture/voice", ct, body))); !strings.Contains(got, `"type":"CLASSIFIED"`) {
		t.Fatalf("an upload after the first arrived:\n%s", got)
	}
}

// An upload that does not arrive in time gets 408 with a plain message
// (no socket addresses) before any stream, and leaves nothing stored.
func TestSlowVoiceUploadTimesOut(t *testing.T) {
	blobs := newWatchedBlobs(t)
	h := newHarness(t, nil, withBlobs(blobs), withTranscriber(stubTranscriber{"x"}),
		func(c *server.Config) { c.UploadTimeout = 300 * time.Millisecond })
	audio := bigWAV(64 << 10)
	u := startUpload(t, h, "slow.wav")
	u.write(t, audio[:len(audio)/2]) // and then nothing more
	resp := u.response(t)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var d struct{ Detail string }
	_ = json.Unmarshal(b, &d)
	if resp.StatusCode != http.StatusRequestTimeout || d.Detail != "the upload did not arrive in time" {
		t.Fatalf("slow upload: %d %s", resp.StatusCode, b)
	}
	if strings.Contains(string(b), "127.0.0.1") || strings.Contains(resp.Header.Get("Content-Type"), "event-stream") {
		t.Errorf("answer %q %s", resp.Header.Get("Content-Type"), b)
	}
	if names := blobs.stored(t); len(names) != 0 {
		t.Errorf("a timed-out upload left %v", names)
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Errorf("%d upstream calls for a timed-out upload", n)
	}
}

// Without transcription the agent could only say it cannot hear the
// audio: the capture is refused with 503 before any stream, on every
// protocol's way in for audio, and the audio is not stored.
func TestVoiceWithoutTranscriptionIsUnavailable(t *testing.T) {
	blobs := newWatchedBlobs(t)
	h := newHarness(t, nil, withBlobs(blobs))
	wav := replay.SilentWAV(8000)
	ct, body := voiceBody(t, "note.wav", "audio/wav", wav)
	inline := runInput([]map[string]any{{"type": "audio", "source": map[string]string{"type": "data",
		"value": base64.StdEncoding.EncodeToString(wav), "mimeType": "audio/wav"}}}, `{}`, `{}`)
	for _, c := range []struct{ path, ct, body string }{
		{"/api/capture/voice", ct, body}, {"/api/capture", ct, body}, {"/api/voice-capture", ct, body}, {"/api/agui", "application/json", inline},
	} {
		r := h.do("POST", c.path, testKey, "bearer", c.ct, c.body)
		if r.status != http.StatusServiceUnavailable || !strings.Contains(r.detail, "transcription is not configured") {
			t.Errorf("%s: %d %s", c.path, r.status, r.body)
		}
	}
	if n := blobs.puts.Load(); n != 0 {
		t.Errorf("%d uploads stored", n)
	}
	if n := len(h.up.Requests()); n != 0 {
		t.Errorf("%d upstream calls", n)
	}
}

// A voice capture's ids come first and its audio's name after them, and
// ids the form gives replace the made ones: the order replays and logs
// rely on.
func TestVoiceCaptureIDs(t *testing.T) {
	blobs := newWatchedBlobs(t)
	h := newHarness(t, nil, withSimulator(t), withBlobs(blobs), withTranscriber(stubTranscriber{"Call mom about her birthday"}))
	for _, c := range []struct {
		fields        map[string]string
		thread, runID string
	}{
		{nil, "thread-id1", "run-id2"},
		{map[string]string{"thread_id": "t-phone", "run_id": "r-phone"}, "t-phone", "r-phone"},
		{map[string]string{"thread_id": "has space"}, "", ""},
	} {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", "note.wav")
		fw.Write(replay.SilentWAV(8000))
		for k, v := range c.fields {
			mw.WriteField(k, v)
		}
		mw.Close()
		if c.thread == "" {
			r := h.do("POST", "/api/capture/voice", testKey, "bearer", mw.FormDataContentType(), buf.String())
			if r.status != http.StatusBadRequest || !strings.Contains(r.detail, "thread_id") {
				t.Errorf("fields %v: %d %s", c.fields, r.status, r.body)
			}
			continue
		}
		frames := h.readStream(h.post("/api/capture/voice", mw.FormDataContentType(), buf.String()))
		last := frames[len(frames)-1].Data
		if last["threadId"] != c.thread || last["runId"] != c.runID {
			t.Errorf("fields %v: COMPLETE %v, want %s %s", c.fields, last, c.thread, c.runID)
		}
	}
	if names := blobs.stored(t); len(names) != 0 {
		t.Errorf("audio left behind: %v", names)
	}
}
