package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
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
	"github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
)

const (
	testKey  = "test-key-0123456789abcdef"
	testUser = "alice"
	otherKey = "other-key-0123456789abcdef"
)

var fixedNow = time.Date(2026, 11, 23, 8, 30, 0, 0, time.UTC)

// harness is a real server (SQLite store, local audio, the Foundry
// provider) in front of a scripted upstream speaking the wire protocol.
type harness struct {
	t        *testing.T
	up       *foundrytest.Server
	store    *sqlite.Store
	srv      *httptest.Server
	provider brainwire.Provider
	server   *server.Server
}

type option func(*server.Config)

func withRunTimeout(d time.Duration) option { return func(c *server.Config) { c.RunTimeout = d } }

func withBlobs(b brainwire.BlobStore) option { return func(c *server.Config) { c.Blobs = b } }

func withTranscriber(tr brainwire.Transcriber) option {
	return func(c *server.Config) { c.Transcriber = tr }
}

func withMaxAudio(n int64) option { return func(c *server.Config) { c.MaxAudioBytes = n } }

func withObserver(o brainwire.Observer) option { return func(c *server.Config) { c.Observer = o } }

// withSimulator puts the offline simulator, over real HTTP, upstream
// instead of the scripted server.
func withSimulator(t *testing.T) option { return withCountedSimulator(t, nil) }

// withCountedSimulator is withSimulator counting the agent runs started
// (POST .../runs: new threads and follow-ups) in runs, when not nil.
func withCountedSimulator(t *testing.T, runs *atomic.Int64) option {
	var handler http.Handler = simulator.New(simulator.Config{ChunkDelay: -1})
	if runs != nil {
		next := handler
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/runs") {
				runs.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	}
	sim := httptest.NewServer(handler)
	t.Cleanup(sim.Close)
	client, err := foundry.NewClient(sim.URL+simulator.ProjectPath,
		&http.Client{Transport: foundry.NewStaticTokenTransport("simulator", nil)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := foundry.NewProvider(client, simulator.DefaultAgentID)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *server.Config) { c.Provider = p }
}

func newHarness(t *testing.T, script []foundrytest.Call, opts ...option) *harness {
	t.Helper()
	up := foundrytest.NewServer(t, script...)
	client, err := foundry.NewClient(up.Endpoint(), up.Client())
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "brainwire.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := foundry.NewProvider(client, "asst_test")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	cfg := server.Config{
		Keys:     server.Keys{testKey: testUser, otherKey: "bob"},
		Provider: p,
		Store:    st,
		Blobs:    blobs,
		NewID:    func() string { return fmt.Sprintf("id%d", n.Add(1)) },
		Now:      func() time.Time { return fixedNow },
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &harness{t: t, up: up, store: st, srv: srv, provider: cfg.Provider, server: s}
}

// recorder is an observer that records what the server tells observers:
// the captures started, each traced (as telemetry does) at a span named
// after its run id, how each ended, the replays and the corrections.
type recorder struct {
	mu          sync.Mutex
	captures    []brainwire.Capture
	ends        map[brainwire.CaptureKind][]brainwire.CaptureResult
	replayed    int
	corrections []brainwire.Correction
}

func (o *recorder) StartCapture(ctx context.Context, c brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.captures = append(o.captures, c)
	ctx = brainwire.WithRunTrace(ctx, brainwire.TraceRef{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b71692033" + c.RunID[len(c.RunID)-2:]})
	return ctx, recorded{o, c.Kind}
}

func (o *recorder) CaptureReplayed(context.Context, brainwire.Capture, brainwire.CaptureResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.replayed++
}

func (o *recorder) Correction(_ context.Context, c brainwire.Correction) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.corrections = append(o.corrections, c)
}

func (o *recorder) seen() ([]brainwire.Capture, []brainwire.Correction) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.captures), slices.Clone(o.corrections)
}

func (o *recorder) started() int { caps, _ := o.seen(); return len(caps) }

func (o *recorder) replays() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.replayed
}

// of is how the captures of kind ended.
func (o *recorder) of(kind brainwire.CaptureKind) []brainwire.CaptureResult {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ends[kind])
}

type recorded struct {
	o    *recorder
	kind brainwire.CaptureKind
}

func (recorded) ProviderEvent(brainwire.AgentEvent)  {}
func (recorded) CaptureEvent(brainwire.CaptureEvent) {}
func (r recorded) End(res brainwire.CaptureResult) {
	r.o.mu.Lock()
	defer r.o.mu.Unlock()
	if r.o.ends == nil {
		r.o.ends = map[brainwire.CaptureKind][]brainwire.CaptureResult{}
	}
	r.o.ends[r.kind] = append(r.o.ends[r.kind], res)
}

// frame is one SSE frame the phone received, with when it arrived.
type frame struct {
	Data map[string]any
	Raw  string
	At   time.Duration
}

// post sends a request with the test key and returns the response.
func (h *harness) post(path, contentType, body string) *http.Response {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// capture posts a text capture and reads the whole SSE stream.
func (h *harness) capture(text string) []frame {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	return h.readStream(h.post("/api/capture", "application/json", string(body)))
}

func (h *harness) readStream(resp *http.Response) []frame {
	h.t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "Connection": "keep-alive", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != v {
			h.t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	return readFrames(h.t, resp.Body)
}

// readFrames parses capture-v2 frames strictly: every frame must be
// exactly one `data: <json>` line and a blank line (comments aside).
func readFrames(t *testing.T, r io.Reader) []frame {
	t.Helper()
	start := time.Now()
	var frames []frame
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			return frames
		}
		if err != nil {
			t.Fatalf("reading stream: %v (after %d frames)", err, len(frames))
		}
		if strings.HasPrefix(line, ":") {
			if blank, _ := br.ReadString('\n'); blank != "\n" {
				t.Fatalf("comment not followed by a blank line: %q", blank)
			}
			continue
		}
		if !strings.HasPrefix(line, "data: ") {
			t.Fatalf("line is not a data line: %q", line)
		}
		if blank, _ := br.ReadString('\n'); blank != "\n" {
			t.Fatalf("data line not followed by a blank line: %q", blank)
		}
		payload := strings.TrimSuffix(strings.TrimPrefix(line, "data: "), "\n")
		var data map[string]any
		if err := json.Unmarshal([]byte(payload), &data); err != nil {
			t.Fatalf("frame payload is not JSON: %q", payload)
		}
		frames = append(frames, frame{Data: data, Raw: payload, At: time.Since(start)})
	}
}

func payloads(frames []frame) string {
	var out []string
	for _, f := range frames {
		out = append(out, f.Raw)
	}
	return strings.Join(out, "\n")
}

func (h *harness) inbox(user string) []brainwire.InboxItem {
	h.t.Helper()
	page, err := h.store.ListInbox(context.Background(), user, brainwire.ListOptions{Limit: 100})
	if err != nil {
		h.t.Fatal(err)
	}
	return page.Items
}

// waitForCancel waits until the upstream received a cancel for runID.
func (h *harness) waitForCancel(runID string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range h.up.Cancels() {
			if strings.Contains(r.Path, "/runs/"+runID+"/cancel") {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("no cancel for run %s; requests: %v", runID, h.up.Requests())
}

// openStream posts body raw on a connection of its own, as a phone does,
// and reads until the stream holds marker; the caller hangs up.
func (h *harness) openStream(path, contentType, body, marker string) (net.Conn, string) {
	h.t.Helper()
	conn, err := net.Dial("tcp", h.srv.Listener.Addr().String())
	if err != nil {
		h.t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		path, testKey, contentType, len(body), body)
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := ""
	for !strings.Contains(got, marker) {
		n, err := conn.Read(buf)
		if err != nil {
			conn.Close()
			h.t.Fatalf("reading: %v (got %q)", err, got)
		}
		got += string(buf[:n])
	}
	return conn, got
}

// disconnectAfterStart hangs up once the stream has started, as a client
// losing its network does, and waits for the upstream run to be cancelled.
func (h *harness) disconnectAfterStart(path, contentType, body, marker string) {
	h.t.Helper()
	conn, _ := h.openStream(path, contentType, body, marker)
	// Once the request creating the run was sent, the provider cancels
	// the run however soon the client goes: waiting for its id if need be.
	deadline := time.Now().Add(5 * time.Second)
	for len(h.up.Find("POST /threads/runs")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	conn.Close()
	h.waitForCancel(upRun)
}
