package telemetry_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/wiring"
)

const apiKey = "telemetry-test-key-0123456789"

// stack is the real capture server (Foundry provider against the offline
// simulator, SQLite) with telemetry wired in by wiring.New, as serve's is:
// the observer, the tool wrapper, the upstream transport, the store
// wrapper and the HTTP server span.
type stack struct {
	t        testing.TB
	tel      *telemetry.Telemetry
	srv      *server.Server
	url      string
	client   *http.Client
	chunks   *chunkRecorder
	closed   bool
	closers  []func()
	handlers sync.WaitGroup
}

// newStack starts a stack with telemetry configured from env (nil: off),
// the simulator streaming without pauses.
func newStack(t testing.TB, env map[string]string) *stack {
	t.Helper()
	ctx := context.Background()
	// brainwire reads which signals go where; the SDK reads the rest of
	// OTEL_* from the process environment itself.
	for k, v := range env {
		if strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, v)
		}
	}
	settings, err := telemetry.SettingsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.Start(ctx, settings, telemetry.Options{
		Agent:   telemetry.Agent{Name: "Classifier", ID: simulator.DefaultAgentID, Provider: foundry.ProviderName},
		Console: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, tel: tel}
	t.Cleanup(s.close)
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	base := agenthttp.NewTransport()
	s.closers = append(s.closers, sim.Close, base.CloseIdleConnections)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "brainwire.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.closers = append(s.closers, func() { st.Close() })
	rec := &chunkRecorder{runs: map[string][]brainwire.ReasoningChunk{}}
	srv, err := wiring.New(wiring.Config{
		Server: server.Config{
			Keys:      server.Keys{apiKey: "alice"},
			Store:     st,
			Observer:  rec,
			AgentName: "Classifier",
			KeepAlive: -1,
		},
		Agent: wiring.Foundry(sim.URL+simulator.ProjectPath, simulator.DefaultAgentID, "", func(next http.RoundTripper) http.RoundTripper {
			return foundry.NewStaticTokenTransport("simulator", next)
		}),
		Transport: base,
		Telemetry: tel,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Handlers finish after the phone has read COMPLETE (the capture's
	// span ends then): shutdown waits for them, as serve's does.
	inner := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.handlers.Add(1)
		defer s.handlers.Done()
		inner.ServeHTTP(w, r)
	}))
	ct := &http.Transport{}
	s.closers = append(s.closers, ct.CloseIdleConnections, hs.Close)
	s.url, s.client, s.chunks, s.srv = hs.URL, &http.Client{Transport: ct}, rec, srv
	return s
}

// close shuts telemetry down and stops everything the stack started.
func (s *stack) close() {
	_ = s.shutdown(5 * time.Second)
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// shutdown flushes telemetry (once) and returns its error.
func (s *stack) shutdown(d time.Duration) error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.handlers.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.tel.Shutdown(ctx)
}

// result is one capture as the phone saw it.
type result struct {
	events   []map[string]any
	threadID string // COMPLETE's threadId
	runID    string // COMPLETE's runId
	latency  time.Duration
}

func (r result) outcome() string {
	for _, e := range r.events {
		switch e["type"] {
		case "CLASSIFIED", "LOW_CONFIDENCE", "MISUNDERSTOOD", "UNRESOLVED", "ERROR":
			return e["type"].(string)
		}
	}
	return ""
}

// capture POSTs text and reads the SSE stream to COMPLETE.
func (s *stack) capture(text string, header map[string]string) result {
	s.t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/capture", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("capture: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		s.t.Fatalf("capture: %s: %s", resp.Status, b)
	}
	var r result
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			s.t.Fatalf("bad SSE data %q: %v", line, err)
		}
		r.events = append(r.events, ev)
		if ev["type"] == "COMPLETE" {
			r.threadID, _ = ev["threadId"].(string)
			r.runID, _ = ev["runId"].(string)
			break
		}
	}
	r.latency = time.Since(start)
	if r.runID == "" {
		s.t.Fatalf("capture %q: no COMPLETE in %v (%v)", text, r.events, sc.Err())
	}
	return r
}

func (s *stack) health() int {
	resp, err := s.client.Get(s.url + "/health")
	if err != nil {
		s.t.Fatalf("health: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// chunkRecorder is an Observer beside telemetry's that keeps every
// reasoning chunk the server produced, per capture run id: what telemetry
// must have exported.
type chunkRecorder struct {
	mu   sync.Mutex
	runs map[string][]brainwire.ReasoningChunk
}

func (r *chunkRecorder) StartCapture(ctx context.Context, info brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return ctx, chunkCapture{r: r, run: info.RunID}
}

func (r *chunkRecorder) get(run string) []brainwire.ReasoningChunk {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[run]
}

type chunkCapture struct {
	r   *chunkRecorder
	run string
}

func (chunkCapture) ProviderEvent(brainwire.AgentEvent) {}
func (chunkCapture) End(brainwire.CaptureResult)        {}
func (c chunkCapture) CaptureEvent(ev brainwire.CaptureEvent) {
	if ev.Type == brainwire.CaptureReasoning {
		c.r.mu.Lock()
		c.r.runs[c.run] = append(c.r.runs[c.run], ev.Chunk)
		c.r.mu.Unlock()
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// settleGoroutines waits for the goroutine count to come down to at most
// want and returns the last count seen.
func settleGoroutines(want int, within time.Duration) int {
	deadline := time.Now().Add(within)
	n := runtime.NumGoroutine()
	for n > want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		runtime.GC()
		n = runtime.NumGoroutine()
	}
	return n
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
