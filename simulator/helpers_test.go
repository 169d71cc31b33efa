package simulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sse"
)

// testClock is the fixed time every test simulator reports.
var testClock = time.Date(2025, 1, 3, 14, 57, 21, 0, time.UTC)

const (
	testAgent        = "asst_test_classifier"
	testInstructions = "Classify captures. (test)"
	apiVersion       = "2025-05-15-preview"
)

// testTools are the tools the server sends with each run.
const testTools = `[{"type":"function","function":{"name":"file_capture","description":"File a capture.",` +
	`"parameters":{"type":"object","properties":{"text":{"type":"string"},"bucket":{"type":"string"},` +
	`"confidence":{"type":"number"},"status":{"type":"string"},"title":{"type":"string"},"question":{"type":"string"}},` +
	`"required":["text","bucket","confidence","status"]},"strict":false}},` +
	`{"type":"function","function":{"name":"transcribe_audio","description":"Transcribe audio.",` +
	`"parameters":{"type":"object","properties":{"blob_url":{"type":"string"}},"required":["blob_url"]},"strict":false}}]`

// frame is one parsed SSE event.
type frame struct {
	Event string
	Data  string
}

// sseReader reads a stream's events with the repository's SSE reader.
type sseReader struct{ r *sse.Reader }

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{sse.NewReader(r, sse.MaxEventSize(1<<22))}
}

// next returns the next event, io.EOF at a clean end.
func (p *sseReader) next() (frame, error) {
	ev, err := p.r.Next()
	if err != nil {
		return frame{}, err
	}
	return frame{Event: string(ev.Name), Data: string(ev.Data)}, nil
}

func parseSSE(t *testing.T, r io.Reader) []frame {
	t.Helper()
	p := newSSEReader(r)
	var out []frame
	for {
		f, err := p.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, f)
	}
}

// client talks to a simulator under test.
type client struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newSim(t *testing.T, cfg simulator.Config) (*client, *simulator.Simulator) {
	t.Helper()
	if cfg.ChunkDelay == 0 {
		cfg.ChunkDelay = -1
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testClock }
	}
	sim := simulator.New(cfg)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return &client{t: t, base: srv.URL + simulator.ProjectPath, hc: srv.Client()}, sim
}

func (c *client) request(ctx context.Context, method, path string, body any) *http.Response {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path+sep+"api-version="+apiVersion, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer test-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// call makes a JSON call and decodes the answer into out (when non-nil),
// failing unless the status is want.
func (c *client) call(method, path string, body any, want int, out any) {
	c.t.Helper()
	resp := c.request(context.Background(), method, path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

// stream posts body and returns every event of the answer.
func (c *client) stream(path string, body map[string]any) []frame {
	c.t.Helper()
	body["stream"] = true
	resp := c.request(context.Background(), http.MethodPost, path, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("POST %s: status %d: %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		c.t.Fatalf("POST %s: Content-Type %q", path, ct)
	}
	frames := parseSSE(c.t, resp.Body)
	checkFraming(c.t, frames)
	return frames
}

func userMessage(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

// createAndRun starts a capture the way the server does.
func (c *client) createAndRun(text string) []frame {
	c.t.Helper()
	return c.stream("/threads/runs", map[string]any{
		"assistant_id": testAgent,
		"instructions": testInstructions,
		"thread":       map[string]any{"messages": []any{userMessage(text)}},
		"tools":        json.RawMessage(testTools),
	})
}

func (c *client) submit(threadID, runID string, outputs map[string]string) []frame {
	c.t.Helper()
	return c.stream("/threads/"+threadID+"/runs/"+runID+"/submit_tool_outputs", map[string]any{"tool_outputs": toolOutputs(outputs)})
}

func toolOutputs(outputs map[string]string) []map[string]string {
	var out []map[string]string
	for id, o := range outputs {
		out = append(out, map[string]string{"tool_call_id": id, "output": o})
	}
	return out
}

// checkFraming: every payload is one line of JSON except done's [DONE].
func checkFraming(t *testing.T, frames []frame) {
	t.Helper()
	for i, f := range frames {
		if f.Event == "done" {
			if f.Data != "[DONE]" {
				t.Errorf("event %d: done with data %q", i, f.Data)
			}
			continue
		}
		if strings.ContainsAny(f.Data, "\r\n") || !json.Valid([]byte(f.Data)) || !strings.HasPrefix(f.Data, "{") {
			t.Errorf("event %d (%s): data is not one line of JSON: %q", i, f.Event, f.Data)
		}
	}
}

func names(frames []frame) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = f.Event
	}
	return out
}

// shape collapses runs of delta events into "<name>*".
func shape(frames []frame) []string {
	var out []string
	for _, n := range names(frames) {
		if strings.HasSuffix(n, ".delta") {
			if len(out) > 0 && out[len(out)-1] == n+"*" {
				continue
			}
			n += "*"
		}
		out = append(out, n)
	}
	return out
}

func wantShape(t *testing.T, frames []frame, want ...string) {
	t.Helper()
	got := shape(frames)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("event sequence:\n got %s\nwant %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}

// Sequences the tests expect, in shape() form.
var (
	runStart    = []string{"thread.run.created", "thread.run.queued", "thread.run.in_progress"}
	messageStep = []string{"thread.run.step.created", "thread.run.step.in_progress", "thread.message.created",
		"thread.message.in_progress", "thread.message.delta*", "thread.message.completed", "thread.run.step.completed"}
	toolStep     = []string{"thread.run.step.created", "thread.run.step.in_progress", "thread.run.step.delta*"}
	resumed      = []string{"thread.run.step.completed", "thread.run.queued", "thread.run.in_progress"}
	toRequire    = []string{"thread.run.requires_action", "done"}
	toCompletion = []string{"thread.run.completed", "done"}
)

func seq(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// firstTurn is a new capture's stream up to requires_action.
func firstTurn() []string {
	return seq([]string{"thread.created"}, runStart, messageStep, toolStep, toRequire)
}

// finalTurn is the stream after the last tool outputs.
func finalTurn() []string { return seq(resumed, messageStep, toCompletion) }

// fileArgs are file_capture's arguments, as the server reads them.
type fileArgs struct {
	Text       string   `json:"text"`
	Bucket     string   `json:"bucket"`
	Confidence *float64 `json:"confidence"`
	Status     string   `json:"status"`
	Title      string   `json:"title"`
	Question   *string  `json:"question"`
}

func decodeAs[T any](t *testing.T, f frame) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(f.Data), &v); err != nil {
		t.Fatalf("%s: decode %s: %v", f.Event, f.Data, err)
	}
	return v
}

// find returns the last event named name.
func find(t *testing.T, frames []frame, name string) frame {
	t.Helper()
	for i := len(frames) - 1; i >= 0; i-- {
		if frames[i].Event == name {
			return frames[i]
		}
	}
	t.Fatalf("no %s event in %v", name, names(frames))
	return frame{}
}

func lastRun(t *testing.T, frames []frame) foundrywire.Run {
	t.Helper()
	for i := len(frames) - 1; i >= 0; i-- {
		if strings.HasPrefix(frames[i].Event, "thread.run.") && !strings.HasPrefix(frames[i].Event, "thread.run.step.") {
			return decodeAs[foundrywire.Run](t, frames[i])
		}
	}
	t.Fatalf("no run event in %v", names(frames))
	return foundrywire.Run{}
}

// pendingCalls returns the calls of the stream's requires_action.
func pendingCalls(t *testing.T, frames []frame) (foundrywire.Run, []foundrywire.RequiredCall) {
	t.Helper()
	r := decodeAs[foundrywire.Run](t, find(t, frames, "thread.run.requires_action"))
	if r.Status != "requires_action" || r.RequiredAction == nil || r.RequiredAction.Type != "submit_tool_outputs" {
		t.Fatalf("requires_action run: status %q, required_action %+v", r.Status, r.RequiredAction)
	}
	return r, r.RequiredAction.SubmitToolOutputs.ToolCalls
}

func fileCall(t *testing.T, c foundrywire.RequiredCall) fileArgs {
	t.Helper()
	if c.Type != "function" || c.Function.Name != "file_capture" || !strings.HasPrefix(c.ID, "call_") {
		t.Fatalf("want a file_capture function call, got %+v", c)
	}
	var a fileArgs
	if err := json.Unmarshal([]byte(c.Function.Arguments), &a); err != nil {
		t.Fatalf("arguments %q: %v", c.Function.Arguments, err)
	}
	if a.Confidence == nil {
		t.Fatalf("arguments %q: no confidence", c.Function.Arguments)
	}
	return a
}

// messages returns the text of each completed message in the stream.
func messages(t *testing.T, frames []frame) []string {
	t.Helper()
	var out []string
	for _, f := range frames {
		if f.Event == "thread.message.completed" {
			m := decodeAs[foundrywire.Message](t, f)
			out = append(out, m.Content[0].Text.Value)
		}
	}
	return out
}

// deltaCount counts message chunks per message id, in order of appearance.
func deltaCount(frames []frame) []int {
	var counts []int
	last := ""
	for _, f := range frames {
		if f.Event != "thread.message.delta" {
			continue
		}
		var d struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal([]byte(f.Data), &d)
		if d.ID != last {
			counts = append(counts, 0)
			last = d.ID
		}
		counts[len(counts)-1]++
	}
	return counts
}

const fileOK = `{"bucket":"%s","confidence":%v,"item_id":"item-1","status":"%s"}`

// deref is a step's tool calls, none when it has none.
func deref[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}
