package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/npmtest"
	"github.com/brainwire/brainwire/replay"
)

// aguiRun is what the AG-UI client saw of one runAgent() call.
type aguiRun struct {
	Events             []map[string]any
	Result             map[string]any
	PendingToolCallIDs []string `json:"pendingToolCallIds"`
	RunError           map[string]any
	Error              *struct {
		Name, Message string
		Status        int
	}
	State    map[string]any
	Messages []map[string]any
}

func (r aguiRun) types() []string {
	var out []string
	for _, e := range r.Events {
		out = append(out, e["type"].(string))
	}
	return out
}

// runAGUIClient drives serve at base with @ag-ui/client's HttpAgent: one
// agent, one runAgent() per entry of runs. It also returns what the client
// logged: it logs whatever it strips, drops or cannot apply, so a stream it
// takes as it is logs nothing.
func runAGUIClient(t *testing.T, base, key string, runs ...map[string]any) ([]aguiRun, []string) {
	t.Helper()
	return aguiClient(t, base+"/api/agui", key, map[string]any{"runs": runs})
}

func aguiClient(t *testing.T, url, key string, spec any) ([]aguiRun, []string) {
	t.Helper()
	specJSON, _ := json.Marshal(spec)
	var got struct {
		Runs     []aguiRun
		Warnings []string
	}
	runNodeClient(t, "@ag-ui/client", "agui-client.mjs", &got, url, key, string(specJSON))
	return got.Runs, got.Warnings
}

// runNodeClient runs a client script of testenv under Node, with pkg
// installed, and decodes what it prints into out. A client that ends
// badly says so in what it prints (the scripts report transport errors
// and timeouts there), so only output that does not decode fails here.
func runNodeClient(t *testing.T, pkg, script string, out any, args ...string) {
	t.Helper()
	node := npmtest.Node(t)
	npmtest.Package(t, pkg)
	path, _ := filepath.Abs(filepath.Join("../../testenv", script))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{path}, args...)...)
	cmd.Dir = filepath.Dir(path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if jerr := json.Unmarshal(stdout, out); jerr != nil {
		t.Fatalf("%s: %v / %v\nstdout: %s\nstderr: %s", script, err, jerr, stdout, stderr.String())
	}
}

func text(s string) map[string]any { return map[string]any{"content": s} }

// accepted checks that the client accepted the run whole: runAgent()
// resolved, the stream opened with RUN_STARTED and ended with wantLast.
func accepted(t *testing.T, r aguiRun, wantLast string) {
	t.Helper()
	ts := r.types()
	if r.Error != nil {
		t.Fatalf("runAgent rejected the stream: %s: %s (after %v)", r.Error.Name, r.Error.Message, ts)
	}
	if len(ts) < 2 || ts[0] != "RUN_STARTED" || ts[len(ts)-1] != wantLast {
		t.Fatalf("events %v, want RUN_STARTED ... %s", ts, wantLast)
	}
}

// filed checks a run that ended in an outcome: RUN_FINISHED with it as the
// result, no tool call left pending (the server ran them all), the
// outcome in the state, the filing's tool call among the messages.
func filed(t *testing.T, r aguiRun, outcome string) {
	t.Helper()
	accepted(t, r, "RUN_FINISHED")
	if r.Result["outcome"] != outcome {
		t.Fatalf("result %v, want outcome %s (events %v)", r.Result, outcome, r.types())
	}
	if r.PendingToolCallIDs == nil || len(r.PendingToolCallIDs) != 0 {
		t.Fatalf("pending tool calls %v: the client would answer them itself", r.PendingToolCallIDs)
	}
	if c, _ := r.State["capture"].(map[string]any); c["outcome"] != outcome {
		t.Fatalf("state %v", r.State)
	}
	var custom int
	for _, e := range r.Events {
		if e["type"] == "CUSTOM" && e["name"] == "brainwire.outcome" {
			custom++
			if e["value"].(map[string]any)["outcome"] != outcome {
				t.Fatalf("outcome event %v", e)
			}
		}
	}
	if custom != 1 {
		t.Fatalf("%d outcome events", custom)
	}
}

// TestAGUIClientAcceptsEveryStream runs captures against serve with the
// real AG-UI client for each outcome and failure; its schemas and
// verification must accept every stream.
func TestAGUIClientAcceptsEveryStream(t *testing.T) {
	base := startServe(t, nil)
	cases := []struct {
		name  string
		runs  []map[string]any
		check func(t *testing.T, runs []aguiRun)
	}{
		{"classified", []map[string]any{text("Call mom about her birthday on Sunday")}, func(t *testing.T, rs []aguiRun) {
			r := rs[0]
			filed(t, r, "classified")
			if r.Result["bucket"] != "People" {
				t.Fatalf("result %v", r.Result)
			}
			// The conversation the client keeps: the capture, the
			// agent's tool call, its result, and the agent's words.
			var roles []string
			for _, m := range r.Messages {
				roles = append(roles, m["role"].(string))
			}
			if strings.Join(roles, " ") != "user assistant tool assistant" {
				t.Fatalf("messages %v", r.Messages)
			}
			if tc := r.Messages[1]["toolCalls"].([]any)[0].(map[string]any)["function"].(map[string]any); tc["name"] != "file_capture" {
				t.Fatalf("tool call %v", tc)
			}
			if c, _ := r.Messages[3]["content"].(string); c != "Filed to People." {
				t.Fatalf("closing words %q", c)
			}
			if slices.Contains(r.types(), "REASONING_MESSAGE_CONTENT") {
				t.Fatal("reasoning sent without being asked for")
			}
		}},
		{"low confidence", []map[string]any{text("Ask Sarah about the deadline")}, func(t *testing.T, rs []aguiRun) {
			filed(t, rs[0], "low_confidence")
		}},
		{"misunderstood, then the answer on the same thread", []map[string]any{
			text("asdf qwerty zxcv"), text("I meant call my sister about her birthday"),
		}, func(t *testing.T, rs []aguiRun) {
			filed(t, rs[0], "misunderstood")
			if q, _ := rs[0].Result["questionText"].(string); q == "" {
				t.Fatalf("no question in %v", rs[0].Result)
			}
			filed(t, rs[1], "classified")
			if rs[1].Result["inboxItemId"] != rs[0].Result["inboxItemId"] {
				t.Fatalf("the answer filed %v, not the misunderstood item %v", rs[1].Result["inboxItemId"], rs[0].Result["inboxItemId"])
			}
		}},
		{"unresolved", []map[string]any{text("Call mom about her birthday #no-tool")}, func(t *testing.T, rs []aguiRun) {
			filed(t, rs[0], "unresolved")
		}},
		{"reasoning when asked, around a failed tool and its retry", []map[string]any{
			{"content": []map[string]string{{"type": "text", "text": "Pay the electricity bill #invalid-bucket"}}, "forwardedProps": map[string]any{"reasoning": true}},
		}, func(t *testing.T, rs []aguiRun) {
			r := rs[0]
			filed(t, r, "classified")
			var reasoning, results int
			for _, e := range r.Events {
				switch e["type"] {
				case "REASONING_MESSAGE_CONTENT":
					reasoning++
				case "TOOL_CALL_RESULT":
					results++
				}
			}
			var roles []string
			for _, m := range r.Messages {
				roles = append(roles, m["role"].(string))
			}
			if reasoning < 10 || results != 2 || !slices.Contains(roles, "reasoning") {
				t.Fatalf("%d reasoning chunks, %d tool results, messages %v", reasoning, results, roles)
			}
		}},
		{"failed run", []map[string]any{text("Renew the car insurance #fail")}, func(t *testing.T, rs []aguiRun) {
			accepted(t, rs[0], "RUN_ERROR")
			if rs[0].RunError["code"] != "upstream" || !strings.Contains(rs[0].RunError["message"].(string), "The agent run failed") {
				t.Fatalf("run error %v", rs[0].RunError)
			}
		}},
		{"in-stream error", []map[string]any{text("Call mom #error-event")}, func(t *testing.T, rs []aguiRun) {
			accepted(t, rs[0], "RUN_ERROR")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs, warnings := runAGUIClient(t, base, phoneKey, c.runs...)
			if len(warnings) != 0 {
				t.Fatalf("the AG-UI client warned: %q", warnings)
			}
			c.check(t, runs)
		})
	}

	t.Run("wrong key", func(t *testing.T) {
		runs, _ := runAGUIClient(t, base, "wrong-key-0123456789abcdef", text("x"))
		if r := runs[0]; r.Error == nil || r.Error.Status != 401 || len(r.Events) != 0 {
			t.Fatalf("run %+v", r)
		}
	})
}

// TestAGUIClientTimeout: a run past BRAINWIRE_RUN_TIMEOUT ends in a
// RUN_ERROR the client accepts.
func TestAGUIClientTimeout(t *testing.T) {
	// The run streams for ten seconds; the timeout leaves its first chunks
	// time to arrive even on a busy machine (with 300 ms, a loaded race
	// build sometimes timed out before the first one).
	base := startServe(t, map[string]string{"BRAINWIRE_RUN_TIMEOUT": "2s"}, "-sim-chunk-delay", "5ms")
	runs, warnings := runAGUIClient(t, base, phoneKey, map[string]any{"content": "Plan the launch #long:2000", "forwardedProps": map[string]any{"reasoning": true}})
	r := runs[0]
	accepted(t, r, "RUN_ERROR")
	if len(warnings) != 0 {
		t.Fatalf("the AG-UI client warned: %q", warnings)
	}
	if r.RunError["code"] != "timeout" || !slices.Contains(r.types(), "REASONING_MESSAGE_CONTENT") {
		t.Fatalf("run error %v after %v", r.RunError, r.types())
	}
}

// TestAGUIClientAcceptsEveryGolden serves every fixture's AG-UI golden
// stream, faults and all (cut streams, upstream errors, 1,000 reasoning
// chunks, split multibyte text), to the real client: each must be
// accepted as it is.
func TestAGUIClientAcceptsEveryGolden(t *testing.T) {
	paths, err := filepath.Glob("../../fixtures/*" + replay.AGUI.GoldenSuffix())
	if err != nil || len(paths) < 14 {
		t.Fatalf("%d AG-UI goldens (%v)", len(paths), err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(filepath.Join("../../fixtures", filepath.Base(r.URL.Path)))
		if err != nil || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(b)
	}))
	defer srv.Close()
	var urls []string
	for _, p := range paths {
		urls = append(urls, srv.URL+"/"+filepath.Base(p))
	}
	runs, warnings := aguiClient(t, srv.URL, "", map[string]any{"streams": urls})
	if len(warnings) != 0 {
		t.Fatalf("the AG-UI client warned: %q", warnings)
	}
	for i, r := range runs {
		ts := r.types()
		if r.Error != nil || len(ts) == 0 || (ts[len(ts)-1] != "RUN_FINISHED" && ts[len(ts)-1] != "RUN_ERROR") {
			t.Errorf("%s: %+v after %v", filepath.Base(paths[i]), r.Error, ts)
		}
		if ts[len(ts)-1] == "RUN_FINISHED" && len(r.PendingToolCallIDs) != 0 {
			t.Errorf("%s: pending tool calls %v", filepath.Base(paths[i]), r.PendingToolCallIDs)
		}
	}
}
