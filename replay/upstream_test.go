package replay_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
	"github.com/brainwire/brainwire/sse"
)

const runsPath = "/api/projects/p/threads/runs"

func createRun(text string) recorder.Request {
	body, _ := json.Marshal(map[string]any{
		"assistant_id": "asst_1",
		"thread":       map[string]any{"messages": []any{map[string]string{"role": "user", "content": text}}},
		"tools":        []any{map[string]any{"type": "function", "function": map[string]any{"name": "file_capture", "description": "v1"}}},
		"stream":       true,
	})
	return recorder.Request{Method: "POST", Path: runsPath, Query: map[string]string{"api-version": "v1"}, Body: body}
}

func streamOf(offsets ...int64) *recorder.Response {
	rs := &recorder.Response{Ms: offsets[0], Status: 200, Header: map[string]string{"Content-Type": "text/event-stream"}}
	for i, ms := range offsets {
		rs.Events = append(rs.Events, recorder.NewEvent(ms, "thread.message.delta", fmt.Appendf(nil, `{"i":%d,"v":"李明 🍜"}`, i)))
	}
	rs.EndMs = offsets[len(offsets)-1]
	return rs
}

func serve(t *testing.T, up *replay.Upstream) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(up)
	t.Cleanup(func() { up.Close(); s.Close() })
	return s
}

func post(t *testing.T, s *httptest.Server, rq recorder.Request) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), rq.Method, s.URL+rq.Path+"?api-version=v1", strings.NewReader(string(rq.Body)))
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// timedWriter is a response writer that notes when each write came, by
// the clock of the test's synctest bubble.
type timedWriter struct {
	*httptest.ResponseRecorder
	start  time.Time
	writes []time.Duration
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, time.Since(w.start))
	return w.ResponseRecorder.Write(p)
}

// TestRealTimeReplayKeepsGaps: at speed 1 each event is written at its
// recorded offset; at speed 2 at half of it; at speed 0 at once. Replay sleeps until each
// event's absolute offset, so errors do not add up. It runs on synctest's
// clock, where a timer fires exactly when due, so the check is exact and
// a busy machine cannot fail it.
func TestRealTimeReplayKeepsGaps(t *testing.T) {
	recorded := []int64{20, 20, 45, 50, 120, 121, 200, 260}
	for _, speed := range []float64{0, 1, 2} {
		t.Run(fmt.Sprintf("speed %v", speed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rs := streamOf(recorded...)
				rs.Ms = 0 // the status line at once: only the events wait
				up := replay.NewUpstream([]recorder.Exchange{{Request: createRun("x"), Response: rs}}, speed)
				defer up.Close()
				rq := createRun("x")
				req := httptest.NewRequest(rq.Method, rq.Path+"?api-version=v1", strings.NewReader(string(rq.Body)))
				w := &timedWriter{ResponseRecorder: httptest.NewRecorder(), start: time.Now()}
				up.ServeHTTP(w, req)
				if len(w.writes) != len(recorded) {
					t.Fatalf("%d writes, want one per event (%d): %q", len(w.writes), len(recorded), w.Body.String())
				}
				for i, at := range w.writes {
					want := time.Duration(0)
					if speed > 0 {
						want = time.Duration(float64(recorded[i]) * float64(time.Millisecond) / speed)
					}
					if at != want {
						t.Errorf("event %d written at %s, want %s", i, at, want)
					}
				}
				if err := up.Err(); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// writeLog is a ResponseWriter keeping every flushed write apart.
type writeLog struct {
	header http.Header
	status int
	writes []string
	cur    strings.Builder
}

func (w *writeLog) Header() http.Header         { return w.header }
func (w *writeLog) WriteHeader(s int)           { w.status = s }
func (w *writeLog) Write(p []byte) (int, error) { return w.cur.Write(p) }
func (w *writeLog) Flush() {
	if w.cur.Len() > 0 {
		w.writes = append(w.writes, w.cur.String())
		w.cur.Reset()
	}
}

// TestSplitWrites: offsets recorded in split_at cut the writes there, even
// inside a multibyte character, and the bytes are unchanged.
func TestSplitWrites(t *testing.T) {
	rs := streamOf(0, 0)
	var wire []byte
	for _, ev := range rs.Events {
		wire = ev.AppendWire(wire)
	}
	han := strings.Index(string(wire), "李")
	rs.SplitAt = []int{5, han + 1, han + 2, len(wire) - 1}
	up := replay.NewUpstream([]recorder.Exchange{{Request: createRun("x"), Response: rs}}, 0)
	w := &writeLog{header: http.Header{}}
	req := httptest.NewRequest("POST", runsPath+"?api-version=v1", strings.NewReader(string(createRun("x").Body)))
	up.ServeHTTP(w, req)
	want := []string{
		string(wire[:5]), string(wire[5 : han+1]), string(wire[han+1 : han+2]),
		string(wire[han+2 : len(rs.Events[0].AppendWire(nil))]),
	}
	if len(w.writes) < 4 || strings.Join(w.writes[:4], "|") != strings.Join(want, "|") {
		t.Fatalf("writes = %q\nwant to start with %q", w.writes, want)
	}
	if strings.Join(w.writes, "") != string(wire) {
		t.Fatal("split writes changed the bytes")
	}
	if last := w.writes[len(w.writes)-1]; last != "\n" {
		t.Errorf("last write = %q, want the final newline alone", last)
	}
}

// TestCutStreamReplaysAsACut: the events, the partial event, then the
// connection breaks: the reader sees an error, not a clean end.
func TestCutStreamReplaysAsACut(t *testing.T) {
	rs := streamOf(0, 0)
	rs.Partial = "event: thread.message.delta\ndata: {\"i\":2,\"v\":\"李"
	rs.Error = "read: connection reset by peer"
	up := replay.NewUpstream([]recorder.Exchange{{Request: createRun("x"), Response: rs}}, 0)
	resp := post(t, serve(t, up), createRun("x"))
	got, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatal("the cut stream ended cleanly")
	}
	if !strings.HasSuffix(string(got), rs.Partial) {
		t.Errorf("the reader did not get the partial event: %q", got)
	}
}

func TestNon2xxAndTransportFailure(t *testing.T) {
	exs := []recorder.Exchange{
		{Request: createRun("x"), Response: &recorder.Response{Status: 429,
			Header: map[string]string{"Content-Type": "application/json", "Retry-After": "20"},
			Body:   json.RawMessage(`{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`)}},
		{Request: createRun("x"), Error: "dial tcp: connection refused"},
	}
	up := replay.NewUpstream(exs, 0)
	s := serve(t, up)
	resp := post(t, s, createRun("x"))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "20" || !strings.Contains(string(body), "slow down") {
		t.Errorf("got %d %v %s", resp.StatusCode, resp.Header, body)
	}
	req, _ := http.NewRequest("POST", s.URL+runsPath+"?api-version=v1", strings.NewReader(string(createRun("x").Body)))
	if resp, err := s.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a recorded transport failure was answered")
	}
	if err := up.Err(); err != nil {
		t.Error(err)
	}
}

// TestMismatchShowsADiff: a request that differs from the recording is
// refused, and the error shows what differs, line by line. Generated ids
// and tool descriptions do not count as differences.
func TestMismatchShowsADiff(t *testing.T) {
	rec := createRun("Call mom")
	submit := recorder.Request{Method: "POST", Path: "/api/projects/p/threads/t1/runs/r1/submit_tool_outputs",
		Query: map[string]string{"api-version": "v1"},
		Body:  json.RawMessage(`{"tool_outputs":[{"tool_call_id":"call_1","output":"{\"bucket\":\"People\",\"item_id\":\"0b6f1d2c-4a1e-4f7a-9d55-1c1f0e9b7a21\"}"}],"stream":true}`)}
	up := replay.NewUpstream([]recorder.Exchange{
		{Request: rec, Response: streamOf(0)},
		{Request: submit, Response: streamOf(0)},
		{Request: rec, Response: streamOf(0)},
	}, 0)
	s := serve(t, up)

	// Same request, reworded tool description: matches.
	same := createRun("Call mom")
	same.Body = []byte(strings.Replace(string(same.Body), `"v1"`, `"reworded"`, 1))
	io.ReadAll(post(t, s, same).Body)
	// Another generated id in the tool output: matches.
	other := submit
	other.Body = []byte(strings.Replace(string(submit.Body), "0b6f1d2c-4a1e-4f7a-9d55-1c1f0e9b7a21", "00000000-0000-4000-8000-000000000003", 1))
	io.ReadAll(post(t, s, other).Body)
	// Different text: refused.
	resp := post(t, s, createRun("Call dad"))
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a mismatching request got %d", resp.StatusCode)
	}
	err := up.Err()
	var mm *replay.MismatchError
	if !errors.As(err, &mm) || mm.Index != 2 {
		t.Fatalf("Err = %v", err)
	}
	for _, line := range []string{`-          "content": "Call mom",`, `+          "content": "Call dad",`, "--- recorded", "+++ replayed"} {
		if !strings.Contains(err.Error(), line+"\n") {
			t.Errorf("the diff lacks %q:\n%s", line, err)
		}
	}
	t.Logf("%v", err)
}

func TestMissingAndExtraRequests(t *testing.T) {
	up := replay.NewUpstream([]recorder.Exchange{{Request: createRun("x"), Response: streamOf(0)}}, 0)
	if err := up.Err(); err == nil || !strings.Contains(err.Error(), "made 0 of the 1 recorded requests") {
		t.Errorf("missing: %v", err)
	}
	s := serve(t, up)
	io.ReadAll(post(t, s, createRun("x")).Body)
	io.ReadAll(post(t, s, createRun("x")).Body)
	if err := up.Err(); err == nil || !strings.Contains(err.Error(), "the recording has only 1 exchanges") {
		t.Errorf("extra: %v", err)
	}
}

// TestClosedStreamIsHeldOpen: a stream the client closed early in the
// recording stays open after its events until the client goes away.
func TestClosedStreamIsHeldOpen(t *testing.T) {
	rs := streamOf(0)
	rs.Closed = true
	up := replay.NewUpstream([]recorder.Exchange{{Request: createRun("x"), Response: rs}}, 0)
	resp := post(t, serve(t, up), createRun("x"))
	r := sse.NewReader(resp.Body)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := r.Next(); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("the stream ended (%v); it should stay open", err)
	case <-time.After(50 * time.Millisecond):
	}
	resp.Body.Close()
	<-done
}
