package floor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/bench/floor"
	"github.com/brainwire/brainwire/bench/load"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/simulator"
)

const key = "floor-test-key-0123456789"

// startSim serves a simulator on a real listener, as the load tool runs
// it, and returns its base URL.
func startSim(t testing.TB, cfg simulator.Config) (*simulator.Simulator, string) {
	t.Helper()
	sim := simulator.New(cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return sim, "http://" + l.Addr().String()
}

// startFloor serves the floor on a real listener, calling upstream over
// the transport serve uses, and returns its base URL.
func startFloor(t testing.TB, face, upstream string, h2c bool) string {
	t.Helper()
	tr := agenthttp.Upstream{H2C: h2c}.Transport()
	t.Cleanup(tr.CloseIdleConnections)
	h, err := floor.New(floor.Config{Upstream: upstream, Face: face, Key: key, Token: "load", Client: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// post sends a capture as the phone does.
func post(ctx context.Context, t testing.TB, url, auth, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+load.DefaultPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type event struct {
	Type     string          `json:"type"`
	StepName string          `json:"stepName"`
	Message  string          `json:"message"`
	Code     string          `json:"code"`
	ThreadID string          `json:"threadId"`
	RunID    string          `json:"runId"`
	Value    json.RawMessage `json:"value"`
}

// readEvents reads a capture-v2 stream to its end, holding it to the
// contract's framing: `data: <json>` and a blank line, nothing else.
func readEvents(t *testing.T, resp *http.Response) []event {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %q: %s", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	var evs []event
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			return evs
		}
		if err != nil {
			t.Fatalf("after %+v: %v", evs, err)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not an event", line)
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		evs = append(evs, ev)
		if blank, err := br.ReadString('\n'); blank != "\n" || err != nil {
			t.Fatalf("after %q: %q, %v", data, blank, err)
		}
	}
}

func types(evs []event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, ev.Type)
	}
	return strings.Join(s, " ")
}

var faces = []string{load.FaceThreads, load.FaceResponses}

// Every outcome the simulator can be driven to reaches the phone as
// serve would send it (the calls upstream are counted by the load test
// of the floor, bench/load's TestRunMeasuresTheFloor).
func TestOutcomes(t *testing.T) {
	for _, face := range faces {
		t.Run(face, func(t *testing.T) {
			_, upstream := startSim(t, simulator.Config{ChunkDelay: -1})
			url := startFloor(t, face, upstream, true)
			for _, tc := range []struct{ text, want string }{
				{"Call mom about her birthday", "STEP_START STEP_END CLASSIFIED COMPLETE"},
				{"maybe", "STEP_START STEP_END MISUNDERSTOOD COMPLETE"},
				{"Call mom about her birthday and the launch deadline #two-calls", "STEP_START STEP_END CLASSIFIED COMPLETE"},
				{"Renew the passport #no-tool", "STEP_START STEP_END UNRESOLVED COMPLETE"},
				{"Renew the passport #fail", "STEP_START ERROR COMPLETE"},
				{"Renew the passport #error-event", "STEP_START ERROR COMPLETE"},
			} {
				evs := readEvents(t, post(t.Context(), t, url, "Bearer "+key, `{"text":"`+tc.text+`","thread_id":"t1","run_id":"r1"}`))
				if got := types(evs); got != tc.want {
					t.Errorf("%q: events %s, want %s", tc.text, got, tc.want)
					continue
				}
				if c := evs[len(evs)-1]; c.ThreadID != "t1" || c.RunID != "r1" {
					t.Errorf("%q: COMPLETE %+v does not echo the request's ids", tc.text, c)
				}
				if e := evs[len(evs)-2]; e.Type == "ERROR" && !strings.Contains(e.Message, "the agent service sent") {
					t.Errorf("%q: ERROR %q", tc.text, e.Message)
				}
				if evs[0].StepName != "Classifying" {
					t.Errorf("%q: step %+v", tc.text, evs[0])
				}
				if evs[2].Type != "CLASSIFIED" {
					continue
				}
				var v struct {
					InboxItemID string  `json:"inboxItemId"`
					Bucket      string  `json:"bucket"`
					Confidence  float64 `json:"confidence"`
				}
				if err := json.Unmarshal(evs[2].Value, &v); err != nil || len(v.InboxItemID) != 36 || v.Bucket == "" || v.Confidence <= 0 {
					t.Errorf("%q: CLASSIFIED %s (%v)", tc.text, evs[2].Value, err)
				}
			}
		})
	}
}

// Requests the phone got wrong are refused before any stream starts.
func TestRefusals(t *testing.T) {
	_, upstream := startSim(t, simulator.Config{ChunkDelay: -1})
	url := startFloor(t, load.FaceThreads, upstream, true)
	for _, tc := range []struct {
		name, auth, body string
		want             int
	}{
		{"no key", "", `{"text":"Call mom"}`, http.StatusUnauthorized},
		{"wrong key", "Bearer not-the-key", `{"text":"Call mom"}`, http.StatusUnauthorized},
		{"key not as a bearer", key, `{"text":"Call mom"}`, http.StatusUnauthorized},
		{"malformed", "Bearer " + key, `{"text":`, http.StatusBadRequest},
		{"not an object", "Bearer " + key, `["Call mom"]`, http.StatusBadRequest},
		{"no text", "Bearer " + key, `{"text":"  "}`, http.StatusBadRequest},
		{"too large", "Bearer " + key, `{"text":"` + strings.Repeat("a", 70<<10) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		resp := post(t.Context(), t, url, tc.auth, tc.body)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.want || !json.Valid(b) || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %s %q", tc.name, resp.Status, b)
		}
	}
	resp, err := http.Get(url + load.DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s: %s", load.DefaultPath, resp.Status)
	}
	resp, err = http.Get(url + floor.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", floor.HealthPath, resp.Status)
	}
}

func TestNewRefusesOtherFaces(t *testing.T) {
	for _, cfg := range []floor.Config{
		{Upstream: "http://127.0.0.1:1", Face: load.FaceADK, Key: key, Token: "t"},
		{Upstream: "http://127.0.0.1:1", Face: "", Key: key, Token: "t"},
		{Upstream: "127.0.0.1:1", Face: load.FaceThreads, Key: key, Token: "t"},
		{Upstream: "http://127.0.0.1:1", Face: load.FaceThreads, Token: "t"},
	} {
		if _, err := floor.New(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// An agent service that fails or cannot be reached is an ERROR event,
// then COMPLETE.
func TestUpstreamFailure(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
	}))
	defer failing.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + l.Addr().String()
	l.Close()
	for _, face := range faces {
		for name, tc := range map[string]struct{ upstream, want string }{
			"5xx":         {failing.URL, "503 Service Unavailable: {\"error\":{\"message\":\"overloaded\""},
			"unreachable": {unreachable, "connection refused"},
		} {
			t.Run(face+"/"+name, func(t *testing.T) {
				url := startFloor(t, face, tc.upstream, false)
				evs := readEvents(t, post(t.Context(), t, url, "Bearer "+key, `{"text":"Call mom"}`))
				if types(evs) != "STEP_START ERROR COMPLETE" || !strings.Contains(evs[1].Message, tc.want) || evs[1].Code != "upstream" {
					t.Fatalf("events %+v", evs)
				}
			})
		}
	}
}

// watch wraps the simulator: it reports each streamed call when it
// starts and, when it ends, whether its client had gone.
type watch struct {
	h            http.Handler
	started      chan string
	ended        chan error
	streamedPath func(string) bool
}

func (w *watch) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if !w.streamedPath(r.URL.Path) {
		w.h.ServeHTTP(rw, r)
		return
	}
	w.started <- r.URL.Path
	w.h.ServeHTTP(rw, r)
	w.ended <- r.Context().Err() // before the server cancels it on return
}

// A phone that hangs up mid-stream ends the call upstream, over HTTP/2
// (a stream reset) and HTTP/1.1 (a closed connection) alike, and the
// handler returns.
func TestHangUpCancelsUpstream(t *testing.T) {
	for _, face := range faces {
		for _, h2c := range []bool{true, false} {
			t.Run(face+map[bool]string{true: "/h2c", false: "/http1"}[h2c], func(t *testing.T) {
				w := &watch{
					h: simulator.New(simulator.Config{ChunkDelay: 5 * time.Millisecond}),
					// Room for every call, so that the simulator never
					// waits on a test that has given up.
					started: make(chan string, 8), ended: make(chan error, 8),
					streamedPath: func(p string) bool {
						return strings.HasSuffix(p, "/threads/runs") || strings.HasSuffix(p, "/responses")
					},
				}
				up := &http.Server{Handler: w, Protocols: new(http.Protocols), ReadHeaderTimeout: 10 * time.Second}
				up.Protocols.SetHTTP1(true)
				up.Protocols.SetUnencryptedHTTP2(true)
				ul, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				go up.Serve(ul)

				tr := agenthttp.Upstream{H2C: h2c}.Transport()
				defer tr.CloseIdleConnections()
				h, err := floor.New(floor.Config{Upstream: "http://" + ul.Addr().String(), Face: face, Key: key, Token: "load", Client: &http.Client{Transport: tr}})
				if err != nil {
					t.Fatal(err)
				}
				returned := make(chan struct{})
				phones := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
					defer close(returned)
					h.ServeHTTP(rw, r)
				}))
				defer phones.Close()
				defer up.Close() // first: the floor's calls end with it

				// 10,000 chunks 5 ms apart: the run streams for 50 s
				// unless the hang-up ends it.
				ctx, hangUp := context.WithCancel(t.Context())
				defer hangUp()
				resp := post(ctx, t, phones.URL, "Bearer "+key, `{"text":"Call mom about her birthday #long:10000"}`)
				line, err := bufio.NewReader(resp.Body).ReadString('\n')
				if err != nil || !strings.Contains(line, "STEP_START") {
					t.Fatalf("first line %q, %v", line, err)
				}
				timeout := time.After(10 * time.Second)
				select {
				case <-w.started:
				case <-timeout:
					t.Fatal("the run was not started upstream")
				}
				hangUp()
				select {
				case err := <-w.ended:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("the upstream call ended with %v, not cancelled by its client", err)
					}
				case <-timeout:
					t.Fatal("the upstream call went on after the phone hung up")
				}
				select {
				case <-returned:
				case <-timeout:
					t.Fatal("the handler did not return")
				}
			})
		}
	}
}
