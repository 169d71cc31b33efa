package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/internal/syncbuf"

	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// callerTrace is the trace the capture telemetryServer sends continues
// (its traceparent).
const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// telemetryServer runs `brainwire serve` with env, sends one capture in
// callerTrace, reads it to COMPLETE and stops serve, which flushes
// telemetry.
func telemetryServer(t *testing.T, env map[string]string, args ...string) *syncbuf.Buffer {
	t.Helper()
	base, logs, stop := runServe(t, env, args...)
	req, _ := http.NewRequest(http.MethodPost, base+"/api/capture", strings.NewReader(`{"text":"Call mom about her birthday on Sunday #long:3"}`))
	req.Header.Set("Authorization", "Bearer "+phoneKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+callerTrace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	complete := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"COMPLETE"`) {
			complete = true
		}
	}
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !complete {
		t.Fatal("no COMPLETE")
	}
	return logs
}

// TestSetupTelemetryWiresServe: on each of the simulator's faces, serve,
// configured by the environment alone, exports the capture's spans in the
// caller's trace (its traceparent), flushed when serve stopped; its
// telemetry names the agent and the upstream calls, and records every
// reasoning chunk in both backends.
func TestSetupTelemetryWiresServe(t *testing.T) {
	for _, c := range []struct {
		face  string
		attrs map[string]any
		spans []string
	}{
		{simResponses, map[string]any{"gen_ai.agent.version": instructions.Default().Version, "gen_ai.provider.name": "azure.ai.agents"},
			[]string{"create_conversation", "create_response"}},
		{simAgent, map[string]any{"gen_ai.agent.id": simulator.DefaultAgentName, "gen_ai.agent.version": simulator.DefaultAgentVersion},
			[]string{"create_conversation", "create_response"}},
		{simThreads, map[string]any{"gen_ai.agent.id": simulator.DefaultAgentID, "gen_ai.provider.name": "azure.ai.agents"},
			[]string{"process_thread_run", "submit_tool_outputs"}},
	} {
		t.Run(c.face, func(t *testing.T) {
			recv := telemetrytest.NewReceiver(t)
			ingest := telemetrytest.NewIngestion(t, telemetrytest.IngestOK)
			logs := telemetryServer(t, map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":           recv.Endpoint(),
				"APPLICATIONINSIGHTS_CONNECTION_STRING": ingest.ConnectionString(),
			}, "-sim-api", c.face)
			seen := map[string]bool{}
			chunks := 0
			for _, s := range recv.Trace(callerTrace) {
				seen[s.Name] = true
				if s.Name == "invoke_agent Classifier" {
					for _, ev := range s.Events {
						if ev.Name == "reasoning.chunk" {
							chunks++
						}
					}
					for k, v := range c.attrs {
						if got := telemetrytest.Attr(s.Attributes, k); got != v {
							t.Errorf("%s = %v, want %v", k, got, v)
						}
					}
				}
			}
			for _, name := range append([]string{"POST /api/capture", "invoke_agent Classifier", "execute_tool file_capture", "store.file"}, c.spans...) {
				if !seen[name] {
					t.Errorf("no %s span (got %v)", name, seen)
				}
			}
			if chunks < 3 || len(ingest.Messages("Reasoning chunk")) != chunks {
				t.Errorf("%d chunk events, %d Application Insights traces", chunks, len(ingest.Messages("Reasoning chunk")))
			}
			// The reasoning is in the traces: not paid for twice in the log.
			if strings.Contains(logs.String(), "reasoning chunk") || !strings.Contains(logs.String(), "log_reasoning=false") {
				t.Error("reasoning chunks logged by default with traces on")
			}
			// Without a transcriber serve refuses voice captures, and
			// declares no voice series it could never count.
			kinds := map[any]bool{}
			for _, dp := range recv.Metric(telemetry.MetricCaptures).GetSum().GetDataPoints() {
				kinds[telemetrytest.Attr(dp.Attributes, string(telemetry.AttrKind))] = true
			}
			if kinds["voice"] || !kinds["text"] || !kinds["follow_up"] {
				t.Errorf("capture series of kinds %v, want text and follow_up", kinds)
			}
		})
	}
}

// TestReasoningGoesSomewhere: the reasoning chunks are logged when no
// trace backend receives them (auto), or when asked beside one (true),
// and not when asked not to (false), nor with content capture off, when
// no content is logged at all.
func TestReasoningGoesSomewhere(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	for _, c := range []struct {
		env    map[string]string
		logged bool
	}{
		{nil, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint(), "BRAINWIRE_LOG_REASONING": "true"}, true},
		{map[string]string{"BRAINWIRE_LOG_REASONING": "false"}, false},
		{map[string]string{"BRAINWIRE_LOG_REASONING": "true", "BRAINWIRE_CAPTURE_CONTENT": "false"}, false},
	} {
		logs := telemetryServer(t, c.env)
		if strings.Contains(logs.String(), "reasoning chunk") != c.logged {
			t.Errorf("%v: reasoning logged %v, want %v:\n%s", c.env, !c.logged, c.logged, logs)
		}
		if c.env["BRAINWIRE_CAPTURE_CONTENT"] == "false" && (strings.Contains(logs.String(), "reasoning_text") || strings.Contains(logs.String(), "Call mom")) {
			t.Errorf("content in the logs with content capture off:\n%s", logs)
		}
	}
}

// TestSDKComplaintsInServesLog: what the SDK makes of a variable it reads
// itself reaches serve's log, in serve's format.
func TestSDKComplaintsInServesLog(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "no-equals-sign")
	var logs syncbuf.Buffer
	env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317"}
	tel, err := setupTelemetry(context.Background(), config{}, func(k string) string { return env[k] }, io.Discard,
		slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	tel.shutdown()
	found := false
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line not in serve's format: %q", line)
		}
		if rec["component"] == "opentelemetry" && rec["level"] == "ERROR" && strings.Contains(line, "parse headers") {
			found = true
		}
	}
	if !found {
		t.Errorf("no line about the headers the SDK could not parse:\n%s", logs.String())
	}
}

// TestEvalRunsAreInstancesOfTheirOwn runs two evaluations with metrics to
// an OTLP receiver: each exports under its own run id as
// service.instance.id (so that Prometheus keeps their series apart) and
// brainwire.eval.run_id, and its counts are complete when it exits, though
// it lives shorter than one export interval.
func TestEvalRunsAreInstancesOfTheirOwn(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.jsonl")
	if err := os.WriteFile(corpus, []byte(`{"text":"Call mom about her birthday on Sunday","expected_bucket":"People"}
{"text":"Pay the electricity bill","expected_bucket":"Admin"}
{"text":"Finish the quarterly report draft by Thursday","expected_bucket":"Projects"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 2 {
		recv := telemetrytest.NewReceiver(t)
		out, err := runCmd(t, map[string]string{"BRAINWIRE_DATA_DIR": filepath.Join(dir, "data"),
			"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint()}, "eval", "-format", "json", corpus)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			RunID     string `json:"eval_run_id"`
			Candidate struct {
				AgentVersion string `json:"agent_version"`
			} `json:"candidate"`
			Results []struct {
				Correct bool `json:"correct"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.RunID == "" || len(rep.Results) != 3 {
			t.Fatalf("report %s: %v", out, err)
		}
		if seen[rep.RunID] {
			t.Fatalf("run id %s twice", rep.RunID)
		}
		seen[rep.RunID] = true
		res := recv.MetricResources()
		if len(res) == 0 {
			t.Fatal("no metrics exported")
		}
		for _, r := range res {
			for k, want := range map[string]string{"service.name": "brainwire-eval", "service.instance.id": rep.RunID, "brainwire.eval.run_id": rep.RunID} {
				if got := telemetrytest.Attr(r.Attributes, k); got != want {
					t.Errorf("metrics resource %s = %v, want %s", k, got, want)
				}
			}
		}
		var n int64
		for _, dp := range recv.Metric("brainwire.captures").GetSum().GetDataPoints() {
			n += dp.GetAsInt()
		}
		if n != 3 {
			t.Errorf("brainwire.captures = %d at exit, want the corpus's 3", n)
		}
		// Its case runs, right and wrong as the report says, by version
		// and run id.
		right := 0
		for _, r := range rep.Results {
			if r.Correct {
				right++
			}
		}
		for correct, want := range map[bool]int64{true: int64(right), false: int64(len(rep.Results) - right)} {
			series := map[string]any{"gen_ai.agent.version": rep.Candidate.AgentVersion, "brainwire.eval.run_id": rep.RunID, "brainwire.eval.correct": correct}
			got, points := int64(0), 0
			for _, dp := range recv.Metric("brainwire.eval.cases").GetSum().GetDataPoints() {
				if telemetrytest.HasAttrs(dp.Attributes, series) {
					got += dp.GetAsInt()
					points++
				}
			}
			if got != want || points != 1 {
				t.Errorf("brainwire.eval.cases %v = %d in %d series at exit, want %d in one", series, got, points, want)
			}
		}
		for _, s := range recv.Spans() {
			if got := telemetrytest.Attr(s.Resource.Values, "brainwire.eval.run_id"); got != rep.RunID {
				t.Fatalf("span %s: resource brainwire.eval.run_id %v, want %s", s.Name, got, rep.RunID)
			}
		}
	}
}
