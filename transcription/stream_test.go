package transcription_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
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

// streamingService is the transcription API reading the form as it
// arrives, keeping only a digest of the file part. halfway runs when half
// the file has arrived; redirect sends the first request elsewhere (307).
type streamingService struct {
	srv      *httptest.Server
	mu       sync.Mutex
	sums     [][32]byte
	sizes    []int64
	halfway  func()
	redirect bool
}

func newStreamingService(t *testing.T, s *streamingService) *streamingService {
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.redirect && r.URL.Query().Get("moved") == "" {
			http.Redirect(w, r, r.URL.Path+"?moved=1&"+r.URL.RawQuery, http.StatusTemporaryRedirect)
			return
		}
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if part.FormName() != "file" {
				continue
			}
			h := sha256.New()
			n, err := io.CopyN(h, part, r.ContentLength/2)
			if err == nil && s.halfway != nil {
				s.halfway()
			}
			m, err2 := io.Copy(h, part)
			if err2 != nil || (err != nil && err != io.EOF) {
				http.Error(w, "reading the file part", http.StatusBadRequest)
				return
			}
			var sum [32]byte
			h.Sum(sum[:0])
			s.mu.Lock()
			s.sums, s.sizes = append(s.sums, sum), append(s.sizes, n+m)
			s.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text":"heard it all"}`)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *streamingService) client(t *testing.T) *transcription.Client {
	t.Helper()
	c, err := transcription.New(transcription.Config{Endpoint: s.srv.URL, Deployment: "whisper", APIKey: "k"}, s.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A 20 MB blob goes to the service as it is read: the heap does not grow
// with the file, and the file part arrives whole.
func TestLargeAudioIsStreamed(t *testing.T) {
	const size = 20 << 20
	audio, sum := bigAudio(t, size)
	var before, during, after runtime.MemStats
	svc := newStreamingService(t, &streamingService{halfway: func() { runtime.ReadMemStats(&during) }})
	c := svc.client(t)
	runtime.GC()
	runtime.ReadMemStats(&before)
	text, err := c.Transcribe(t.Context(), audio, "voice-big.wav", "audio/wav")
	runtime.ReadMemStats(&after)
	if err != nil || text != "heard it all" {
		t.Fatalf("Transcribe = %q, %v", text, err)
	}
	if len(svc.sums) != 1 || svc.sums[0] != sum || svc.sizes[0] != size {
		t.Fatalf("the service got %d files (%v bytes), want the %d bytes sent", len(svc.sums), svc.sizes, size)
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

// A request sent again (a redirect here) reads the blob again from its
// store, not from a copy in memory, and closes what it opened.
func TestResentRequestReopensTheAudio(t *testing.T) {
	const size = 3 << 20
	audio, sum := bigAudio(t, size)
	svc := newStreamingService(t, &streamingService{redirect: true})
	text, err := svc.client(t).Transcribe(t.Context(), audio, "voice-big.wav", "audio/wav")
	if err != nil || text != "heard it all" {
		t.Fatalf("Transcribe = %q, %v", text, err)
	}
	if len(svc.sums) != 1 || svc.sums[0] != sum || svc.sizes[0] != size {
		t.Fatalf("after the redirect the service got %v bytes, want %d intact", svc.sizes, size)
	}
	if r, c := audio.reopened.Load(), audio.closed.Load(); r != 1 || c != 1 {
		t.Errorf("the audio was opened again %d times and closed %d times, want 1 and 1", r, c)
	}
	// What the caller opened is still the caller's to close.
	if _, err := audio.File.Seek(0, io.SeekStart); err != nil {
		t.Errorf("the caller's file was closed: %v", err)
	}
}

// A transcription the service refuses for a moment is sent again by the
// retry layer serve puts under the client, with the audio read again from
// its blob.
func TestRefusedTranscriptionIsSentAgainFromTheBlob(t *testing.T) {
	audio, _ := bigAudio(t, 64<<10)
	want, err := os.ReadFile(audio.Name())
	if err != nil {
		t.Fatal(err)
	}
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
	if len(calls) != 2 || !bytes.Equal(calls[0].File, want) || !bytes.Equal(calls[1].File, want) {
		t.Fatalf("the service got %d requests; want the whole audio twice", len(calls))
	}
	if r, c := audio.reopened.Load(), audio.closed.Load(); r != 1 || c != 1 {
		t.Errorf("the audio was opened again %d times and closed %d times, want 1 and 1", r, c)
	}
}
