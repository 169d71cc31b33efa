package transcription_test

import (
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/transcription"
)

// fileAudio is a blob on disk as the tools hand it over: a
// brainwire.AudioBlob that opens its file again when asked.
type fileAudio struct {
	*os.File
	size             int64
	reopened, closed atomic.Int32
}

func (f *fileAudio) Size() int64 { return f.size }

func (f *fileAudio) Reopen() (io.ReadCloser, error) {
	f.reopened.Add(1)
	r, err := os.Open(f.Name())
	if err != nil {
		return nil, err
	}
	return closeCounter{r, &f.closed}, nil
}

type closeCounter struct {
	*os.File
	n *atomic.Int32
}

func (c closeCounter) Close() error { c.n.Add(1); return c.File.Close() }

// bigAudio writes size random bytes behind a WAV header and returns the
// file, opened, and the bytes' digest.
func bigAudio(t *testing.T, size int) (*fileAudio, [32]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "voice-big.wav")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	rng := rand.NewChaCha8([32]byte{7})
	buf := make([]byte, 1<<20)
	copy(buf, "RIFF\x00\x00\x00\x00WAVE")
	for left := size; left > 0; left -= len(buf) {
		if left < len(buf) {
			buf = buf[:left]
		}
		if left != size {
			_, _ = rng.Read(buf)
		}
		_, _ = w.Write(buf)
		h.Write(buf)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var sum [32]byte
	h.Sum(sum[:0])
	return &fileAudio{File: f, size: int64(size)}, sum
}

// A 20 MB blob goes to the service as it is read: the heap does not grow
// with the file, and the file part arrives whole.
func TestLargeAudioIsStreamed(t *testing.T) {
	const size = 20 << 20
	audio, sum := bigAudio(t, size)
	var before, during, after runtime.MemStats
	svc := newService(t, answerText("heard it all"))
	svc.halfway = func() { runtime.ReadMemStats(&during) }
	c := svc.client(t, nil)
	runtime.GC()
	runtime.ReadMemStats(&before)
	text, err := c.Transcribe(t.Context(), audio, "voice-big.wav", "audio/wav")
	runtime.ReadMemStats(&after)
	if err != nil || text != "heard it all" {
		t.Fatalf("Transcribe = %q, %v", text, err)
	}
	if calls := svc.calls(); len(calls) != 1 || calls[0].File != sum || calls[0].FileSize != size {
		t.Fatalf("the service got %+v, want the %d bytes sent", calls, size)
	}
	const slack = 8 << 20 // buffers and the test server's own; the file is 20 MB
	if grew := int64(during.HeapAlloc) - int64(before.HeapAlloc); grew > slack {
		t.Errorf("the heap grew by %d bytes while the audio was on its way", grew)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > slack {
		t.Errorf("%d bytes allocated to send %d bytes of audio", alloc, size)
	}
	if n := audio.reopened.Load(); n != 0 {
		t.Errorf("the audio was opened again %d times for one request", n)
	}
}

// A transcription the service refuses for a moment is sent again by the
// retry layer serve puts under the client, with the audio read again from
// its blob, not from a copy in memory; what that opened is closed, what
// the caller opened is still the caller's to close.
func TestRefusedTranscriptionIsSentAgainFromTheBlob(t *testing.T) {
	audio, want := bigAudio(t, 64<<10)
	var n atomic.Int32
	svc := newService(t, func(w http.ResponseWriter, r *http.Request, got request) {
		if n.Add(1) == 1 {
			w.Header().Set("retry-after-ms", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"code":"429","message":"Rate limit is exceeded."}}`)
			return
		}
		answerText("heard it again")(w, r, got)
	})
	hc := &http.Client{Transport: retry.Policy{Retries: 2}.Transport(svc.srv.Client().Transport)}
	c, err := transcription.New(transcription.Config{Endpoint: svc.srv.URL, Deployment: "whisper", APIKey: "test-key"}, hc)
	if err != nil {
		t.Fatal(err)
	}
	text, err := c.Transcribe(t.Context(), audio, "voice.wav", "audio/wav")
	if err != nil || text != "heard it again" {
		t.Fatalf("Transcribe = %q, %v", text, err)
	}
	calls := svc.calls()
	if len(calls) != 2 || calls[0].File != want || calls[1].File != want {
		t.Fatalf("the service got %d requests; want the whole audio twice", len(calls))
	}
	if r, c := audio.reopened.Load(), audio.closed.Load(); r != 1 || c != 1 {
		t.Errorf("the audio was opened again %d times and closed %d times, want 1 and 1", r, c)
	}
	if _, err := audio.File.Seek(0, io.SeekStart); err != nil {
		t.Errorf("the caller's file was closed: %v", err)
	}
}
