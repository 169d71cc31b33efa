package crashtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire/simulator"
)

// faultRates are the chances that a call to a service is refused (429,
// 503), cut before it reaches the service, cut after the service did it
// (its answer lost), or stalled before it is served.
type faultRates struct {
	refuse, reset, lose, stall float64
	maxStall                   time.Duration
}

// faulty is a service behind a hostile network: it serves next, but
// refuses, resets and stalls calls now and then (rates), and refuses
// every call while an outage lasts (outage). hook, when set, sees each
// call first. Safe for concurrent use.
type faulty struct {
	next  http.Handler
	rates faultRates

	mu     sync.Mutex
	rng    *rand.Rand
	until  time.Time // the outage's end
	hook   func(r *http.Request, body []byte) (drop bool)
	counts map[string]*atomic.Int64
}

// serveFaulty serves next behind a hostile network for the test, at the
// URL it returns.
func serveFaulty(t *testing.T, next http.Handler, rates faultRates, seed uint64) (*faulty, string) {
	f := &faulty{next: next, rates: rates, rng: rand.New(rand.NewPCG(seed, 0x5eed)), counts: map[string]*atomic.Int64{}}
	for _, k := range []string{"calls", "refused", "reset", "lost", "stalled", "outage"} {
		f.counts[k] = new(atomic.Int64)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// setHook makes h see every call first; a call it drops is not served.
func (f *faulty) setHook(h func(r *http.Request, body []byte) (drop bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// outage refuses every call for d.
func (f *faulty) outage(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.until = time.Now().Add(d)
}

// String is what befell the calls.
func (f *faulty) String() string {
	c := func(k string) int64 { return f.counts[k].Load() }
	return fmt.Sprintf("%d calls, %d refused, %d reset, %d answers lost, %d stalled, %d in outages",
		c("calls"), c("refused"), c("reset"), c("lost"), c("stalled"), c("outage"))
}

func (f *faulty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.counts["calls"].Add(1)
	f.mu.Lock()
	hook, out := f.hook, time.Now().Before(f.until)
	x, stall := f.rng.Float64(), time.Duration(f.rng.Float64()*float64(f.rates.maxStall))
	f.mu.Unlock()
	if hook != nil && hook(r, body) {
		return
	}
	if r.Method != http.MethodPost {
		// Lookups answer: the retry layer asks them when an answer was
		// lost, and they must not lie.
		f.next.ServeHTTP(w, r)
		return
	}
	rt := f.rates
	switch {
	case out:
		f.counts["outage"].Add(1)
		refuse(w, http.StatusServiceUnavailable)
		return
	case x < rt.refuse:
		f.counts["refused"].Add(1)
		status := http.StatusTooManyRequests
		if x < rt.refuse/2 {
			status = http.StatusServiceUnavailable
		}
		refuse(w, status)
		return
	case x < rt.refuse+rt.reset:
		f.counts["reset"].Add(1)
		cut(w)
		return
	case x < rt.refuse+rt.reset+rt.lose:
		// The service does the call; its answer never arrives.
		f.counts["lost"].Add(1)
		f.next.ServeHTTP(httptest.NewRecorder(), r)
		cut(w)
		return
	case x < rt.refuse+rt.reset+rt.lose+rt.stall:
		f.counts["stalled"].Add(1)
		select {
		case <-time.After(stall):
		case <-r.Context().Done():
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// refuse answers as a busy service does: a 429 in the service's JSON, or
// a gateway's 503 page.
func refuse(w http.ResponseWriter, status int) {
	w.Header().Set("retry-after-ms", "40")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, `{"error":{"message":"Rate limit is exceeded. Try again shortly.","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	io.WriteString(w, "<html><body><h1>503 Service Temporarily Unavailable</h1><hr>nginx</body></html>")
}

// cut resets the connection without an answer.
func cut(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset, not an orderly close
	}
	conn.Close()
}

// agentService is the built-in simulator, one for both replicas (it keeps
// the conversations), behind a hostile network.
func agentService(t *testing.T, rates faultRates, seed uint64) (*faulty, map[string]string) {
	t.Helper()
	f, url := serveFaulty(t, simulator.New(simulator.Config{ChunkDelay: 3 * time.Millisecond}), rates, seed)
	return f, map[string]string{
		"AZURE_AI_PROJECT_ENDPOINT":      url + simulator.ProjectPath,
		"AZURE_AI_MODEL_DEPLOYMENT_NAME": simulator.DefaultModel,
		"AZURE_AI_PROJECT_TOKEN":         "crash-test",
	}
}

// speech is what the transcription service knows of the phones' audio:
// the words of each recording, by its hash.
type speech struct {
	mu    sync.Mutex
	words map[[32]byte]string
}

func (s *speech) say(audio []byte, words string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.words[sha256.Sum256(audio)] = words
}

// ServeHTTP answers the Azure OpenAI transcription API
// (POST /openai/deployments/{d}/audio/transcriptions, multipart with a
// file part) with the words of the audio it was sent.
func (s *speech) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/audio/transcriptions") || r.Header.Get("api-key") == "" {
		http.Error(w, `{"error":{"code":"404","message":"Resource not found"}}`, http.StatusNotFound)
		return
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, `{"error":{"code":"invalid_request","message":"no file"}}`, http.StatusBadRequest)
		return
	}
	audio, _ := io.ReadAll(file)
	s.mu.Lock()
	words, ok := s.words[sha256.Sum256(audio)]
	s.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"code":"invalid_audio","message":"unknown audio"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"text": words})
}

// transcriptionService is the phones' speech, transcribed behind a hostile
// network.
func transcriptionService(t *testing.T, rates faultRates, seed uint64) (*speech, *faulty, map[string]string) {
	t.Helper()
	s := &speech{words: map[[32]byte]string{}}
	f, url := serveFaulty(t, s, rates, seed)
	return s, f, map[string]string{
		"AZURE_OPENAI_ENDPOINT":                 url,
		"AZURE_OPENAI_TRANSCRIPTION_DEPLOYMENT": "whisper",
		"AZURE_OPENAI_API_KEY":                  "crash-test",
	}
}
