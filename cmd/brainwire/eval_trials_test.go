package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/eval/stats"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// oldDraft is instructions that lose the cues of many People and
// Projects captures: against the errands instructions, a clearly worse
// baseline.
const oldDraft = "You are the brainwire Classifier, an old draft.\n\n" +
	"Ignore cues: mom, dad, sister, brother, friend, birthday, lunch with, call mom, catch up, gift, wedding, met, project, launch, deadline\n"

const jaegerTemplate = "http://jaeger.test/trace/{trace_id}"

// TestEvalTrials runs the corpus four times a side against a simulator
// that varies as a model does, an old draft of instructions as the
// baseline and the errands instructions as the candidate, and checks the
// report's claims against the runs it lists: accuracies, the cases
// better and worse, the p-value and verdict, the changed cases listed,
// and every run linked to the trace telemetry recorded it in. The HTML report says the same (eval_html_test.go), and
// the same seed gives the same answers again.
func TestEvalTrials(t *testing.T) {
	recv := telemetrytest.NewReceiver(t)
	dir := t.TempDir()
	draft := filepath.Join(dir, "draft.txt")
	if err := os.WriteFile(draft, []byte(oldDraft), 0o644); err != nil {
		t.Fatal(err)
	}
	jsonPath, htmlPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "report.html")
	env := map[string]string{
		"BRAINWIRE_DATA_DIR":          filepath.Join(dir, "data"),
		"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint(),
		"OTEL_METRICS_EXPORTER":       "none",
	}
	vary := []string{"-trials", "4", "-sim-confidence-noise", "0.05", "-sim-other-bucket", "0.05", "-sim-seed", "3"}
	md, err := runCmd(t, env, append([]string{"eval", "-baseline", draft, "-instructions", errandsInstr, "-format", "markdown",
		"-trace-url", jaegerTemplate, "-json", jsonPath, "-html", htmlPath}, append(vary, corpus)...)...)
	if err != nil {
		t.Fatal(err)
	}
	rep := readReport(t, jsonPath)
	if rep.Trials != 4 || rep.Cases != 50 || len(rep.Results) != 200 || len(rep.BaselineResults) != 200 || rep.Comparison == nil {
		t.Fatalf("trials %d, cases %d, results %d and %d", rep.Trials, rep.Cases, len(rep.Results), len(rep.BaselineResults))
	}
	// The cases were timed: the timing of those that changed is a list,
	// empty or not.
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var timing struct {
		Timing struct {
			Cases []json.RawMessage `json:"cases"`
		} `json:"timing"`
	}
	if err := json.Unmarshal(raw, &timing); err != nil || rep.Timing.CasesTested != 50 || timing.Timing.Cases == nil {
		t.Errorf("timing of %d cases tested: cases %v (%v), want a list", rep.Timing.CasesTested, timing.Timing.Cases, err)
	}

	// Accuracy, and the paired comparison, from the runs.
	base, cand := correctByCase(t, rep.BaselineResults, 4), correctByCase(t, rep.Results, 4)
	for _, side := range []struct {
		p    eval.PassReport
		byID map[string]int
	}{{*rep.Baseline, base}, {rep.Candidate, cand}} {
		total := 0
		for _, n := range side.byID {
			total += n
		}
		if side.p.Metrics.Correct != total || side.p.AccuracyInterval.Estimate != float64(total)/200 {
			t.Errorf("%s: accuracy %d (%v), the runs have %d right", side.p.Instructions, side.p.Metrics.Correct, side.p.AccuracyInterval.Estimate, total)
		}
	}
	var diffs []float64 // in corpus order, as the report tests them
	better, worse := 0, 0
	for i := 0; i < len(rep.Results); i += 4 {
		id := rep.Results[i].Case.ID
		d := float64(cand[id]-base[id]) / 4
		diffs = append(diffs, d)
		switch {
		case d > 0:
			better++
		case d < 0:
			worse++
		}
	}
	c := rep.Comparison
	if c.CasesBetter != better || c.CasesWorse != worse {
		t.Errorf("cases better %d, worse %d; the runs say %d and %d", c.CasesBetter, c.CasesWorse, better, worse)
	}
	if p := stats.PairedPermutation(diffs, 20000, 1); p != c.PValue || c.Verdict != eval.Better || p >= 0.05 {
		t.Errorf("verdict %s at p %v; the runs give p %v: want better", c.Verdict, c.PValue, p)
	}
	// The simulator varied: trials of a case disagreed.
	if rep.Candidate.CasesAgreed == 50 || strings.Contains(md, "Every trial agreed") {
		t.Errorf("%d cases of 50 agreed on every trial with variation on", rep.Candidate.CasesAgreed)
	}

	// The changed cases, each listed (how trials decide them is eval's
	// TestCompareOverTrials), among them every case the verdict counts
	// better or worse.
	if len(rep.Changes) == 0 {
		t.Fatal("no case changed")
	}
	listed := map[string]bool{}
	for _, ch := range rep.Changes {
		listed[ch.Case.ID] = true
		if !strings.Contains(md, "| "+string(ch.Kind)+" | "+ch.Case.ID+" |") {
			t.Errorf("the Markdown report does not list %s %s", ch.Kind, ch.Case.ID)
		}
		// An answer shows the confidence of the runs that gave it: none
		// filed without asking below the threshold, or asked above it.
		for _, a := range []eval.Answer{ch.Baseline, ch.Candidate} {
			if a.Outcome.Resolved() && (a.Outcome == brainwire.OutcomeClassified) != (a.Confidence >= brainwire.ConfidenceThreshold) {
				t.Errorf("case %s shows %s %s %.2f", ch.Case.ID, a.Bucket, a.Outcome, a.Confidence)
			}
		}
	}
	for id, n := range cand {
		if n != base[id] && !listed[id] {
			t.Errorf("case %s: %d/4 right, then %d/4, not among the changed cases", id, base[id], n)
		}
	}

	// Every run is linked to its own trace: the trace of the invoke_agent
	// span whose run_id is the run's.
	traceOf := map[string]string{}
	for _, s := range recv.Spans() {
		if strings.HasPrefix(s.Name, "invoke_agent ") {
			traceOf[str(attr(s, "run_id"))] = hex.EncodeToString(s.TraceId)
		}
	}
	for _, r := range append(rep.Results, rep.BaselineResults...) {
		if r.TraceID == "" || r.TraceID != traceOf[r.RunID] || r.TraceURL != "http://jaeger.test/trace/"+r.TraceID {
			t.Fatalf("run %s: trace %q, link %q; its span's trace is %q", r.RunID, r.TraceID, r.TraceURL, traceOf[r.RunID])
		}
		if r.Reasoning == "" || len(r.Reasoning) > eval.ExcerptBytes+len(" … ") {
			t.Fatalf("run %s: reasoning excerpt of %d bytes", r.RunID, len(r.Reasoning))
		}
	}
	if !strings.Contains(md, "| http://jaeger.test/trace/") {
		t.Error("the Markdown report links no trace")
	}
	checkHTMLReport(t, htmlPath, rep)

	// The same seed, the same answers.
	again := filepath.Join(dir, "again.json")
	if _, err := runCmd(t, map[string]string{"BRAINWIRE_DATA_DIR": filepath.Join(dir, "data")}, append([]string{"eval", "-baseline", draft,
		"-instructions", errandsInstr, "-format", "json", "-json", again}, append(vary, corpus)...)...); err != nil {
		t.Fatal(err)
	}
	rep2 := readReport(t, again)
	if fmt.Sprint(correctByCase(t, rep2.Results, 4)) != fmt.Sprint(cand) || rep2.Comparison.PValue != c.PValue {
		t.Errorf("the same seed gave other answers: p %v, then %v", c.PValue, rep2.Comparison.PValue)
	}
}

// TestEvalTrialsAgree checks that the deterministic simulator's trials
// agree, and that the report says so.
func TestEvalTrialsAgree(t *testing.T) {
	out, err := runCmd(t, map[string]string{"BRAINWIRE_DATA_DIR": t.TempDir()}, "eval", "-baseline", "agent", "-trials", "2", corpus)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"each run 2 times a side", "cases whose trials agreed", "50/50",
		"Every trial agreed: each case got the same answer on all 2 runs", "Verdict: the candidate is not distinguishable from the baseline",
		"Changed cases (0)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestEvalRefusesBadFlags: a command line eval cannot run is a usage
// error before anything runs: bounds of the flags, the runs of a side, the
// simulator's variation with another agent configured.
func TestEvalRefusesBadFlags(t *testing.T) {
	env := map[string]string{"BRAINWIRE_DATA_DIR": t.TempDir()}
	big := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(big, []byte(strings.Repeat(`{"text":"Call mom","expected_bucket":"People"}`+"\n", 1001)), 0o644); err != nil {
		t.Fatal(err)
	}
	foundry := map[string]string{"BRAINWIRE_DATA_DIR": t.TempDir(), "AZURE_AI_PROJECT_ENDPOINT": "https://x.services.ai.azure.com/api/projects/p",
		"AZURE_AI_MODEL_DEPLOYMENT_NAME": "gpt", "AZURE_AI_PROJECT_TOKEN": "t"}
	for _, c := range []struct {
		env  map[string]string
		args []string
		says string
	}{
		{env, nil, "a corpus file is required"},
		{env, []string{corpus, corpus}, "one corpus file"},
		{env, []string{corpus, "-trials", "2"}, "one corpus file, after the flags"},
		{env, []string{"-min-accuracy", "1.5", corpus}, "-min-accuracy"},
		{env, []string{"-format", "xml", corpus}, "-format"},
		{env, []string{"-instructons", errandsInstr, corpus}, "flag provided but not defined"},
		{env, []string{"-trials", "0", corpus}, "-trials"},
		{env, []string{"-trials", "101", corpus}, "-trials"},
		{env, []string{"-confidence-drop", "0", corpus}, "-confidence-drop"},
		{env, []string{"-trace-url", "http://jaeger/trace/", corpus}, "-trace-url"},
		{env, []string{"-sim-confidence-noise", "2", corpus}, "-sim-confidence-noise"},
		{env, []string{"-sim-other-bucket", "-0.1", corpus}, "-sim-other-bucket"},
		{env, []string{"-trials", "100", big}, "over 100000 runs"},
		{foundry, []string{"-sim-other-bucket", "0.1", corpus}, "an agent service is configured"},
	} {
		_, err := runCmd(t, c.env, append([]string{"eval"}, c.args...)...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("eval %q: %v; want a usage error saying %q", c.args, err, c.says)
		}
	}
}

func readReport(t *testing.T, path string) *eval.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep eval.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("JSON report %s: %v", path, err)
	}
	return &rep
}

// correctByCase counts the right runs of each case, checking that every
// case ran trials times, numbered from 1.
func correctByCase(t *testing.T, results []eval.Result, trials int) map[string]int {
	t.Helper()
	out := map[string]int{}
	runs := map[string][]int{}
	for _, r := range results {
		runs[r.Case.ID] = append(runs[r.Case.ID], r.N)
		right := 0
		if r.Correct {
			right = 1
		}
		out[r.Case.ID] += right
	}
	want := make([]int, trials)
	for i := range want {
		want[i] = i + 1
	}
	for id, ns := range runs {
		if fmt.Sprint(ns) != fmt.Sprint(want) {
			t.Errorf("case %s ran trials %v, want %v", id, ns, want)
		}
	}
	return out
}
