package recorder_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/syncbuf"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/recorder"
)

// memorySink keeps recordings in the order they were saved; read it once
// the recorder is closed.
type memorySink []*recorder.Fixture

func (m *memorySink) Save(_ context.Context, fx *recorder.Fixture) error {
	*m = append(*m, fx)
	return nil
}

func newRecorder(t *testing.T, cfg recorder.Config) *recorder.Recorder {
	t.Helper()
	if cfg.Sample == 0 {
		cfg.Sample = 1
	}
	r, err := recorder.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// capture runs fn as one observed capture: ctx is what the server would
// pass to the provider.
func capture(r *recorder.Recorder, fn func(ctx context.Context, obs brainwire.CaptureObserver)) {
	ctx, obs := r.StartCapture(context.Background(), brainwire.Capture{
		Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1", Text: "Call mom"})
	fn(ctx, obs)
	obs.End(brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, ReasoningChunks: 1})
}

// TestTransportPassesBytesThroughAtOnce streams from an upstream that
// waits, after its first event, until the client has read that event. A
// transport that buffered, or read ahead before returning bytes, would
// never get the first event to the reader and the test would time out.
func TestTransportPassesBytesThroughAtOnce(t *testing.T) {
	first := "event: thread.run.created\ndata: {\"id\":\"run_1\",\"v\":\"李明\"}\n\n"
	rest := "event: thread.message.delta\ndata: {\"v\":\"🍜\"}\n\nevent: done\ndata: [DONE]\n\n"
	gotFirst := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		select {
		case <-gotFirst:
		case <-time.After(5 * time.Second):
			t.Error("the client did not get the first event while the upstream waited")
			return
		}
		time.Sleep(30 * time.Millisecond)
		io.WriteString(w, rest)
	}))
	defer up.Close()

	sink := &memorySink{}
	rec := newRecorder(t, recorder.Config{Sink: sink})
	client := &http.Client{Transport: rec.Transport(http.DefaultTransport)}
	var body bytes.Buffer
	capture(rec, func(ctx context.Context, _ brainwire.CaptureObserver) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, up.URL+"/api/projects/p/threads/runs?api-version=v1",
			strings.NewReader(`{"assistant_id":"asst_1","stream":true}`))
		req.Header.Set("Authorization", "Bearer secret-token-123")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			body.Write(buf[:n])
			if body.Len() == len(first) {
				close(gotFirst)
			}
			if err != nil {
				break
			}
		}
	})
	if body.String() != first+rest {
		t.Fatalf("the reader got %q", body.String())
	}
	rec.Close(context.Background())
	fxs := (*sink)
	if len(fxs) != 1 {
		t.Fatalf("%d recordings, want 1", len(fxs))
	}
	ex := fxs[0].Exchanges[0]
	if ex.Request.Method != "POST" || ex.Request.Path != "/api/projects/p/threads/runs" || ex.Request.Query["api-version"] != "v1" {
		t.Errorf("request = %+v", ex.Request)
	}
	if ex.Request.Header["Authorization"] != recorder.Redacted {
		t.Errorf("Authorization = %q", ex.Request.Header["Authorization"])
	}
	if string(ex.Request.Body) != `{"assistant_id":"asst_1","stream":true}` {
		t.Errorf("request body = %s", ex.Request.Body)
	}
	evs := ex.Response.Events
	if len(evs) != 3 || string(evs[1].Payload()) != `{"v":"🍜"}` || evs[2].Name != "done" {
		t.Fatalf("events = %+v", evs)
	}
	if gap := evs[1].Ms - evs[0].Ms; gap < 25 {
		t.Errorf("the second event's offset is %d ms after the first; the upstream waited 30 ms", gap)
	}
	if ex.Response.Error != "" || ex.Response.Partial != "" || ex.Response.Closed {
		t.Errorf("a whole stream was recorded as broken: %+v", ex.Response)
	}
}

// stubTransport answers with a body built per request.
type stubTransport func(*http.Request) (*http.Response, error)

func (f stubTransport) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// brokenBody returns its bytes, then err.
type brokenBody struct {
	data []byte
	err  error
}

func (b *brokenBody) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		return 0, b.err
	}
	n := copy(p, b.data[:min(len(b.data), 7)]) // small reads: events arrive in pieces
	b.data = b.data[n:]
	return n, nil
}

func (b *brokenBody) Close() error { return nil }

func sseResponse(body io.ReadCloser) *http.Response {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body}
}

func TestTransportRecordsAStreamCutMidEvent(t *testing.T) {
	cut := errors.New("read: connection reset by peer")
	wire := "event: a\ndata: {\"n\":1}\n\nevent: thread.message.delta\ndata: {\"val"
	sink := &memorySink{}
	rec := newRecorder(t, recorder.Config{Sink: sink})
	rt := rec.Transport(stubTransport(func(*http.Request) (*http.Response, error) {
		return sseResponse(&brokenBody{data: []byte(wire), err: cut}), nil
	}))
	capture(rec, func(ctx context.Context, _ brainwire.CaptureObserver) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://upstream/threads/runs", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if !errors.Is(err, cut) || string(got) != wire {
			t.Errorf("reader got %q, %v", got, err)
		}
		resp.Body.Close()
	})
	rec.Close(context.Background())
	rs := (*sink)[0].Exchanges[0].Response
	if len(rs.Events) != 1 || rs.Partial != "event: thread.message.delta\ndata: {\"val" || rs.Error != cut.Error() {
		t.Fatalf("recorded %+v", rs)
	}
}

func TestTransportRecordsErrorsAndPlainBodies(t *testing.T) {
	sink := &memorySink{}
	rec := newRecorder(t, recorder.Config{Sink: sink})
	calls := 0
	rt := rec.Transport(stubTransport(func(*http.Request) (*http.Response, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("dial tcp: connection refused")
		}
		return &http.Response{StatusCode: 429, Header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {"20"}},
			Body: io.NopCloser(strings.NewReader(`{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`))}, nil
	}))
	capture(rec, func(ctx context.Context, _ brainwire.CaptureObserver) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://upstream/threads/t/runs/r", nil)
		if _, err := rt.RoundTrip(req); err == nil {
			t.Fatal("no error")
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	})
	rec.Close(context.Background())
	exs := (*sink)[0].Exchanges
	if exs[0].Error != "dial tcp: connection refused" || exs[0].Response != nil {
		t.Errorf("transport error recorded as %+v", exs[0])
	}
	rs := exs[1].Response
	if rs.Status != 429 || rs.Header["Retry-After"] != "20" || !strings.Contains(string(rs.Body), "rate_limit_exceeded") || rs.IsStream() {
		t.Errorf("429 recorded as %+v", rs)
	}
}

func TestTransportWithoutRecordingIsUntouched(t *testing.T) {
	rec := newRecorder(t, recorder.Config{Sink: &memorySink{}})
	want := &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("x"))}
	rt := rec.Transport(stubTransport(func(*http.Request) (*http.Response, error) { return want, nil }))
	req, _ := http.NewRequest(http.MethodGet, "http://upstream/health", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil || resp != want || resp.Body != want.Body {
		t.Fatal("a request outside any recorded capture was altered")
	}
}

func TestRecorderKeepsToolsAndOutcome(t *testing.T) {
	sink := &memorySink{}
	rec := newRecorder(t, recorder.Config{Sink: sink, Upstream: "simulator"})
	capture(rec, func(_ context.Context, obs brainwire.CaptureObserver) {
		obs.ProviderEvent(brainwire.AgentEvent{Kind: brainwire.AgentRunStatus, Status: brainwire.RunRequiresAction})
		obs.ProviderEvent(brainwire.AgentEvent{Kind: brainwire.AgentToolResult,
			Tool:   brainwire.ToolCall{ID: "call_1", Name: "file_capture", Arguments: []byte(`{"bucket":"Misc"}`)},
			Result: brainwire.ToolResult{Output: `{"error":"invalid_bucket"}`, IsError: true}})
		obs.ProviderEvent(brainwire.AgentEvent{Kind: brainwire.AgentRunStatus, Status: brainwire.RunRequiresAction})
		obs.ProviderEvent(brainwire.AgentEvent{Kind: brainwire.AgentToolResult,
			Tool:   brainwire.ToolCall{ID: "call_2", Name: "file_capture", Arguments: []byte(`{"bucket":"People"}`)},
			Result: brainwire.ToolResult{Output: `{"item_id":"i1"}`}})
		obs.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureReasoning})
	})
	rec.Close(context.Background())
	fx := (*sink)[0]
	if len(fx.Tools) != 2 || fx.Tools[0].Round != 1 || fx.Tools[1].Round != 2 || !fx.Tools[0].IsError {
		t.Errorf("tools = %+v", fx.Tools)
	}
	if fx.Result.Outcome != "classified" || fx.Result.ReasoningChunks != 1 || fx.Capture.Text != "Call mom" || fx.Upstream != "simulator" {
		t.Errorf("fixture = %+v", fx)
	}
}

// TestRecorderKeepsWhatReplayMustSeed: a follow-up's recording holds the
// item it answered as it was before the run, and a voice capture's the
// name of its upload.
func TestRecorderKeepsWhatReplayMustSeed(t *testing.T) {
	sink := &memorySink{}
	rec := newRecorder(t, recorder.Config{Sink: sink})
	item := brainwire.InboxItem{ID: "item-1", RawText: "Sam thing", Title: "Sam", Source: brainwire.KindVoice,
		Status: brainwire.StatusMisunderstood, UpstreamThreadID: "thread_up",
		ClassificationMeta: &brainwire.Classification{Bucket: "People", Confidence: 0.3}}
	for _, c := range []brainwire.Capture{
		{Kind: brainwire.KindFollowUp, RunID: "run-1", Text: "my colleague", FollowUp: &brainwire.FollowUp{Item: item, Round: 2}},
		{Kind: brainwire.KindVoice, RunID: "run-2", AudioURL: "http://127.0.0.1:1/voice/voice-1.m4a?sig=x"},
	} {
		_, obs := rec.StartCapture(context.Background(), c)
		obs.End(brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified})
	}
	rec.Close(context.Background())
	got := (*sink)
	if len(got) != 2 {
		t.Fatalf("%d recordings", len(got))
	}
	fu := got[0].Capture.FollowUp
	want := recorder.InboxSeed{ID: "item-1", RawText: "Sam thing", Title: "Sam", Source: brainwire.KindVoice,
		Bucket: "People", Confidence: 0.3, UpstreamThreadID: "thread_up"}
	if fu == nil || fu.Round != 2 || fu.Item != want || got[0].Capture.UpstreamThreadID != "thread_up" {
		t.Errorf("follow-up capture = %+v", got[0].Capture)
	}
	if a := got[1].Capture.Audio; a == nil || a.Filename != "voice-1.m4a" {
		t.Errorf("voice capture audio = %+v", a)
	}
}

// TestRecorderOverLimitDropsTheRecordingNotTheStream: past MaxBytes the
// reader still gets every byte; the recording is dropped and logged.
func TestRecorderOverLimitDropsTheRecordingNotTheStream(t *testing.T) {
	var logs syncbuf.Buffer
	sink := &memorySink{}
	rec := newRecorder(t, recorder.Config{Sink: sink, MaxBytes: 1000, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	wire := strings.Repeat("event: thread.message.delta\ndata: {\"v\":\"chunk\"}\n\n", 200)
	rt := rec.Transport(stubTransport(func(*http.Request) (*http.Response, error) {
		return sseResponse(io.NopCloser(strings.NewReader(wire))), nil
	}))
	capture(rec, func(ctx context.Context, _ brainwire.CaptureObserver) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://upstream/threads/runs", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || string(got) != wire {
			t.Errorf("the reader lost bytes: %d of %d, %v", len(got), len(wire), err)
		}
	})
	rec.Close(context.Background())
	if n := len((*sink)); n != 0 {
		t.Errorf("%d recordings saved; an over-limit capture must be dropped", n)
	}
	if !strings.Contains(logs.String(), "over the recording limit") {
		t.Errorf("no log line about the limit: %s", logs.String())
	}
}

func TestRecorderSinkFailureIsOnlyLogged(t *testing.T) {
	var logs syncbuf.Buffer
	rec := newRecorder(t, recorder.Config{
		Sink:   recorder.DirSink{Dir: filepath.Join(t.TempDir(), "does-not-exist")},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	capture(rec, func(context.Context, brainwire.CaptureObserver) {})
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "recording not written") {
		t.Errorf("the failed write was not logged: %s", logs.String())
	}
}

func TestRecorderSampling(t *testing.T) {
	for _, c := range []struct {
		sample float64
		draws  []float64
		want   int
	}{
		{sample: 0, want: 0},
		{sample: 1, want: 3},
		{sample: 0.5, draws: []float64{0.1, 0.7, 0.49}, want: 2},
	} {
		sink := &memorySink{}
		i := 0
		r, err := recorder.New(recorder.Config{Sink: sink, Sample: c.sample, Rand: func() float64 {
			i++
			return c.draws[i-1]
		}})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			capture(r, func(context.Context, brainwire.CaptureObserver) {})
		}
		r.Close(context.Background())
		if got := len((*sink)); got != c.want {
			t.Errorf("sample %v: %d recordings, want %d", c.sample, got, c.want)
		}
	}
	if _, err := recorder.New(recorder.Config{Sink: &memorySink{}, Sample: 1.5}); err == nil {
		t.Error("sample 1.5 accepted")
	}
}

func TestDirSinkWritesNamedFiles(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder(t, recorder.Config{Sink: recorder.DirSink{Dir: dir}, Secrets: []string{"Call mom"}})
	capture(rec, func(context.Context, brainwire.CaptureObserver) {})
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), "-run-1.json") {
		t.Fatalf("dir holds %v", entries)
	}
	fx, err := recorder.Load(filepath.Join(dir, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	if fx.Capture.Text != recorder.Redacted {
		t.Errorf("configured secret not redacted from the capture text: %q", fx.Capture.Text)
	}
}
