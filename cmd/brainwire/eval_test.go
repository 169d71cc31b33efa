package main

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

const (
	corpus       = "../../eval/testdata/captures.jsonl"
	errandsInstr = "../../eval/testdata/instructions-errands.txt"
)

// TestEvalComparesInstructions runs the 50-case corpus against the
// simulator with its own instructions as the baseline and the errands
// instructions as the candidate: the JSON report has both passes and the
// cases that changed, the Markdown copy says the same, and the traces of
// every capture carry the evaluation's id and the version of the
// instructions it ran.
func TestEvalComparesInstructions(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	dir := t.TempDir()
	md := filepath.Join(dir, "report.md")
	env := map[string]string{
		"BRAINWIRE_DATA_DIR":          filepath.Join(dir, "data"),
		"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint(),
		"OTEL_METRICS_EXPORTER":       "none",
	}
	out, err := runCmd(t, env, "eval", "-baseline", "agent", "-instructions", errandsInstr, "-format", "json", "-markdown", md, corpus)
	if err != nil {
		t.Fatal(err)
	}
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, out)
	}
	if rep.Cases != 50 || rep.Baseline == nil || len(rep.Results) != 50 || !strings.HasPrefix(rep.RunID, "eval-") {
		t.Fatalf("report %+v", rep)
	}
	base, cand := rep.Baseline.Metrics, rep.Candidate.Metrics
	if base.Correct != 43 || cand.Correct != 48 {
		t.Errorf("accuracy: baseline %d/50, candidate %d/50; want 43 and 48", base.Correct, cand.Correct)
	}
	if rep.Baseline.AgentVersion == "" || rep.Candidate.AgentVersion == "" || rep.Baseline.AgentVersion == rep.Candidate.AgentVersion {
		t.Errorf("versions %q and %q: want two different ones", rep.Baseline.AgentVersion, rep.Candidate.AgentVersion)
	}
	// The version eval names is the one the agent gets once those
	// instructions are deployed (here: as the instructions of the agent
	// brainwire defines, which the simulator follows).
	cfg, err := loadConfig(envFunc(map[string]string{"BRAINWIRE_INSTRUCTIONS": errandsInstr}))
	if err != nil {
		t.Fatal(err)
	}
	b := &backends{}
	defer b.close()
	open, err := openAgent(t.Context(), cfg, newCredential(), b, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	provider, err := open(agenthttp.NewTransport())
	if err != nil {
		t.Fatal(err)
	}
	deployed, err := provider.(brainwire.AgentDescriber).DescribeAgent(t.Context())
	if err != nil || deployed.Version != rep.Candidate.AgentVersion {
		t.Errorf("deployed version %q (%v), eval's %q: want the same", deployed.Version, err, rep.Candidate.AgentVersion)
	}
	kinds := map[eval.ChangeKind][]string{}
	for _, c := range rep.Changes {
		kinds[c.Kind] = append(kinds[c.Kind], c.Case.ID)
	}
	if strings.Join(kinds[eval.Broken], ",") != "ideas-03" || len(kinds[eval.Fixed]) != 6 || len(rep.Changes) != 7 {
		t.Errorf("changes %v", kinds)
	}
	if cand.Confusion.Counts[3][3] != 13 {
		t.Errorf("Admin filed as Admin %d times, want 13: %+v", cand.Confusion.Counts[3][3], cand.Confusion)
	}
	md2, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# brainwire eval `" + rep.RunID + "`", "## Changed cases (7)", "| broken | ideas-03 |", "| accuracy | 0.860 (43/50) | 0.960 (48/50) | +0.100 |"} {
		if !strings.Contains(string(md2), want) {
			t.Errorf("Markdown report lacks %q:\n%s", want, md2)
		}
	}
	// Nothing went to the configured store.
	if _, err := os.Stat(filepath.Join(dir, "data", "brainwire.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("eval touched the configured store: %v", err)
	}

	spans := 0
	versions := map[string]bool{}
	for _, s := range recv.Spans() {
		if !strings.HasPrefix(s.Name, "invoke_agent ") {
			continue
		}
		spans++
		if got := attr(s, "brainwire.eval.run_id"); got != rep.RunID {
			t.Fatalf("span %s: eval run id %v, want %s", s.Name, got, rep.RunID)
		}
		versions[str(attr(s, "gen_ai.agent.version"))] = true
		if telemetrytest.Attr(s.Resource.Values, "service.name") != "brainwire-eval" {
			t.Fatalf("service.name %v", telemetrytest.Attr(s.Resource.Values, "service.name"))
		}
	}
	if spans != 100 || !versions[rep.Baseline.AgentVersion] || !versions[rep.Candidate.AgentVersion] || len(versions) != 2 {
		t.Errorf("%d invoke_agent spans with versions %v, want 100 with the two passes'", spans, versions)
	}
}

func attr(s *telemetrytest.Span, key string) any { return telemetrytest.Attr(s.Attributes, key) }

func str(v any) string {
	s, _ := v.(string)
	return s
}

// TestEvalMinAccuracy checks the exit status CI reads: 3 below
// -min-accuracy, success at or above.
func TestEvalMinAccuracy(t *testing.T) {
	env := map[string]string{"BRAINWIRE_DATA_DIR": t.TempDir()}
	out, err := runCmd(t, env, "eval", "-min-accuracy", "0.9", corpus)
	var code exitCode
	if !errors.As(err, &code) || code.code != exitBelowMinAccuracy || !strings.Contains(err.Error(), "0.860 is below -min-accuracy 0.900") {
		t.Fatalf("below the bar: %v", err)
	}
	if !strings.Contains(out, "FAILED: accuracy 0.860 is below -min-accuracy 0.900") || !strings.Contains(out, "Wrong cases") {
		t.Errorf("report:\n%s", out)
	}
	if _, err := runCmd(t, env, "eval", "-instructions", errandsInstr, "-min-accuracy", "0.9", corpus); err != nil {
		t.Errorf("above the bar: %v", err)
	}
}

// TestEvalRefusesBadInput checks that a corpus or instructions file that
// cannot be used stops the evaluation before anything runs, saying where.
func TestEvalRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := map[string]string{"BRAINWIRE_DATA_DIR": dir}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"malformed line": {[]string{write("bad.jsonl", `{"text":"a","expected_bucket":"People"}`+"\n"+`{"text":`)}, "line 2"},
		"no such corpus": {[]string{filepath.Join(dir, "missing.jsonl")}, "no such file"},
		"empty instructions": {[]string{"-instructions", write("empty.txt", " \n"), write("ok.jsonl", `{"text":"a","expected_bucket":"People"}`)},
			"the file is empty"},
		"huge instructions": {[]string{"-instructions", write("huge.txt", strings.Repeat("x", maxInstructionsBytes+1)), write("ok2.jsonl", `{"text":"a","expected_bucket":"People"}`)},
			"over 256000 bytes"},
	} {
		_, err := runCmd(t, env, append([]string{"eval"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
