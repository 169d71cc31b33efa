package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
)

func TestReadCorpus(t *testing.T) {
	f, err := os.Open("testdata/captures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := eval.ReadCorpus(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 50 || cases[0].ID != "people-01" || cases[0].ExpectedBucket != "People" {
		t.Fatalf("%d cases, first %+v", len(cases), cases[0])
	}

	good := `{"text":"Call mom","expected_bucket":"People"}`
	tests := []struct {
		name, corpus, err string
	}{
		{"blank lines and CRLF", "\n" + good + "\r\n\n" + `{"text":"x","expected_outcome":"misunderstood","meta":{"a":1}}` + "\n", ""},
		{"no final newline", good, ""},
		{"empty", "\n\n", "no cases"},
		{"malformed", good + "\n{\"text\":", "line 2: not a case"},
		{"two values", good + good, "line 1: more than one JSON value"},
		{"unknown field", `{"text":"x","expected_bucket":"People","bucket":"Ideas"}`, `unknown field "bucket"`},
		{"not an object", `["x"]`, "line 1: not a case"},
		{"empty text", `{"text":"  ","expected_bucket":"People"}`, "text is empty"},
		{"long text", `{"text":"` + strings.Repeat("é", eval.MaxTextLength+1) + `","expected_bucket":"People"}`, "over 10000 characters"},
		{"unknown bucket", `{"text":"x","expected_bucket":"Misc"}`, `unknown expected_bucket "Misc"`},
		{"unknown outcome", `{"text":"x","expected_outcome":"filed"}`, `unknown expected_outcome "filed"`},
		{"bucket missing", `{"text":"x"}`, "expected_bucket is required"},
		{"bucket missing for a filing outcome", `{"text":"x","expected_outcome":"classified"}`, "expected_bucket is required"},
		{"duplicate id", `{"id":"a","text":"x","expected_bucket":"People"}` + "\n" + `{"id":"a","text":"y","expected_bucket":"People"}`, `id "a" is already line 1's`},
		{"oversized line", `{"text":"` + strings.Repeat("a", eval.MaxLineBytes) + `","expected_bucket":"People"}`, "line 1: longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cases, err := eval.ReadCorpus(strings.NewReader(tc.corpus))
			if tc.err == "" {
				if err != nil || len(cases) == 0 {
					t.Fatalf("%v, %v", cases, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
	// Too many cases.
	many := strings.Repeat(good+"\n", eval.MaxCases+1)
	if _, err := eval.ReadCorpus(strings.NewReader(many)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d cases: %v", eval.MaxCases+1, err)
	}
	// Written and read back, a corpus is the same.
	var buf bytes.Buffer
	if err := eval.WriteCorpus(&buf, cases); err != nil {
		t.Fatal(err)
	}
	back, err := eval.ReadCorpus(&buf)
	if err != nil || len(back) != len(cases) || back[49].Text != cases[49].Text || back[49].ExpectedOutcome != brainwire.OutcomeMisunderstood {
		t.Errorf("round trip: %v, %v", back, err)
	}
}

func TestCaseCorrect(t *testing.T) {
	people := eval.Case{ExpectedBucket: "People"}
	unclear := eval.Case{ExpectedOutcome: brainwire.OutcomeMisunderstood}
	sure := eval.Case{ExpectedBucket: "People", ExpectedOutcome: brainwire.OutcomeClassified}
	tests := []struct {
		c       eval.Case
		outcome brainwire.Outcome
		bucket  string
		want    bool
	}{
		{people, brainwire.OutcomeClassified, "People", true},
		{people, brainwire.OutcomeLowConfidence, "People", true},
		{people, brainwire.OutcomeClassified, "Ideas", false},
		{people, brainwire.OutcomeMisunderstood, "People", false},
		{people, brainwire.OutcomeError, "", false},
		{unclear, brainwire.OutcomeMisunderstood, "Ideas", true},
		{unclear, brainwire.OutcomeClassified, "Ideas", false},
		{sure, brainwire.OutcomeLowConfidence, "People", false},
		{sure, brainwire.OutcomeClassified, "People", true},
	}
	for _, tc := range tests {
		if got := tc.c.Correct(tc.outcome, tc.bucket); got != tc.want {
			t.Errorf("%+v with %s %s: %v, want %v", tc.c, tc.outcome, tc.bucket, got, tc.want)
		}
	}
}

func result(id, expected string, outcome brainwire.Outcome, bucket string) eval.Result {
	c := eval.Case{ID: id, Text: "text " + id, ExpectedBucket: expected}
	if expected == "" {
		c.ExpectedOutcome = brainwire.OutcomeMisunderstood
	}
	return eval.Result{Case: c, Trial: eval.Trial{N: 1, Outcome: outcome, Bucket: bucket, Conf: 0.8, Correct: c.Correct(outcome, bucket), RunID: "run-" + id,
		ReasoningBytes: 100, ReasoningChunks: 10, InputTokens: 1000, OutputTokens: 100, TimeToOutcome: 20 * time.Millisecond}}
}

func TestSummarize(t *testing.T) {
	res := []eval.Result{
		result("1", "People", brainwire.OutcomeClassified, "People"),
		result("2", "People", brainwire.OutcomeLowConfidence, "Ideas"),
		result("3", "Ideas", brainwire.OutcomeClassified, "Ideas"),
		result("4", "Admin", brainwire.OutcomeMisunderstood, ""),
		result("5", "", brainwire.OutcomeMisunderstood, ""),
		result("6", "Admin", brainwire.OutcomeError, ""),
	}
	res[5].ReasoningBytes, res[5].TimeToOutcome = 1000, time.Second
	m := eval.Summarize(res)
	if m.Cases != 6 || m.Correct != 3 || math.Abs(m.Accuracy-0.5) > 1e-9 {
		t.Errorf("accuracy %d/%d = %v", m.Correct, m.Cases, m.Accuracy)
	}
	score := map[string]eval.BucketScore{}
	for _, b := range m.Buckets {
		score[b.Bucket] = b
	}
	if p := score["People"]; p.Filed != 1 || p.Expected != 2 || p.Precision != 1 || p.Recall != 0.5 {
		t.Errorf("People %+v", p)
	}
	if i := score["Ideas"]; i.Filed != 2 || i.Expected != 1 || i.Precision != 0.5 || i.Recall != 1 {
		t.Errorf("Ideas %+v", i)
	}
	if a := score["Admin"]; a.Filed != 0 || !math.IsNaN(float64(a.Precision)) || a.Recall != 0 {
		t.Errorf("Admin %+v: nothing filed, so no precision", a)
	}
	cm := m.Confusion
	at := func(row, col string) int {
		for i, r := range cm.Rows {
			for j, c := range cm.Cols {
				if r == row && c == col {
					return cm.Counts[i][j]
				}
			}
		}
		t.Fatalf("no cell %s/%s", row, col)
		return 0
	}
	if at("People", "People") != 1 || at("People", "Ideas") != 1 || at("Admin", "misunderstood") != 1 || at("(no bucket)", "misunderstood") != 1 || at("Admin", "error") != 1 {
		t.Errorf("confusion %+v", cm)
	}
	rates := map[brainwire.Outcome]int{}
	for _, o := range m.Outcomes {
		rates[o.Outcome] = o.Count
	}
	if rates[brainwire.OutcomeMisunderstood] != 2 || rates[brainwire.OutcomeError] != 1 || rates[brainwire.OutcomeUnresolved] != 0 {
		t.Errorf("outcomes %+v", m.Outcomes)
	}
	if m.ReasoningBytes.P50 != 100 || m.ReasoningBytes.P95 != 1000 || m.ReasoningBytes.Total != 1500 || m.TimeToOutcomeMS.P95 != 1000 {
		t.Errorf("distributions %+v %+v", m.ReasoningBytes, m.TimeToOutcomeMS)
	}
	// JSON can hold a bucket without precision.
	b, err := json.Marshal(m)
	if err != nil || !strings.Contains(string(b), `"precision":null`) {
		t.Errorf("JSON %s, %v", b, err)
	}
	var back eval.Metrics
	if err := json.Unmarshal(b, &back); err != nil || !math.IsNaN(float64(back.Buckets[3].Precision)) {
		t.Errorf("JSON back: %+v, %v", back.Buckets, err)
	}
}

func TestCompareListsChangedCases(t *testing.T) {
	base := []eval.Result{
		result("same", "People", brainwire.OutcomeClassified, "People"),
		result("fix", "Admin", brainwire.OutcomeMisunderstood, ""),
		result("break", "Ideas", brainwire.OutcomeClassified, "Ideas"),
		result("sway", "People", brainwire.OutcomeClassified, "Ideas"),
	}
	cand := []eval.Result{
		result("same", "People", brainwire.OutcomeClassified, "People"),
		result("fix", "Admin", brainwire.OutcomeClassified, "Admin"),
		result("break", "Ideas", brainwire.OutcomeMisunderstood, ""),
		result("sway", "People", brainwire.OutcomeClassified, "Admin"),
	}
	changes := eval.Compare(base, cand, eval.DefaultConfidenceDrop)
	var got []string
	for _, c := range changes {
		got = append(got, string(c.Kind)+":"+c.Case.ID)
	}
	if strings.Join(got, " ") != "broken:break fixed:fix changed:sway" {
		t.Errorf("changes %v", got)
	}
	rep := eval.NewReport(eval.ReportConfig{RunID: "eval-x", Corpus: "c.jsonl", MinAccuracy: 0.75},
		&eval.Pass{Instructions: "new.txt", Results: cand}, &eval.Pass{Instructions: "agent", Results: base})
	if rep.Passed || len(rep.Changes) != 3 {
		t.Errorf("report passed %v with %d changes", rep.Passed, len(rep.Changes))
	}
	var table, md bytes.Buffer
	if err := rep.Write(&table, eval.FormatTable); err != nil {
		t.Fatal(err)
	}
	if err := rep.Write(&md, eval.FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Changed cases (3)", "broken", "FAILED: accuracy 0.500 is below -min-accuracy 0.750", "new.txt"} {
		if !strings.Contains(table.String(), want) || !strings.Contains(md.String(), want) {
			t.Errorf("reports lack %q:\n%s\n%s", want, table.String(), md.String())
		}
	}
	if err := rep.Write(&table, "xml"); err == nil {
		t.Error("unknown format accepted")
	}
}

// TestRegressionsRankedByWhatThePersonLivesWith checks that changes are
// ranked by what the person is left with: a wrong filing made without
// asking is the worst, a wrong answer the person is now asked about is
// an improvement, and the confidence of a wrong answer falling is no
// regression.
func TestRegressionsRankedByWhatThePersonLivesWith(t *testing.T) {
	at := func(id, expected string, outcome brainwire.Outcome, bucket string, conf float64) eval.Result {
		r := result(id, expected, outcome, bucket)
		r.Conf = conf
		return r
	}
	classified, low := brainwire.OutcomeClassified, brainwire.OutcomeLowConfidence
	base := []eval.Result{
		at("asked", "Admin", classified, "People", 0.71),    // wrong, filed silently
		at("silenced", "Ideas", low, "Projects", 0.54),      // wrong, asked
		at("misfiled", "People", classified, "People", 0.9), // right
		at("broke", "People", classified, "People", 0.9),
		at("unsure", "People", classified, "People", 0.95),
		at("fix", "People", low, "Ideas", 0.4),
		at("sway", "People", classified, "Ideas", 0.9),
		at("wrong-less-sure", "People", classified, "Ideas", 0.95),
		at("wrong-still-asked", "People", low, "Ideas", 0.55),
	}
	cand := []eval.Result{
		at("asked", "Admin", low, "People", 0.41),             // now asked: better
		at("silenced", "Ideas", classified, "Projects", 0.81), // now misfiled silently: the worst but one
		at("misfiled", "People", classified, "Ideas", 0.85),   // right, now misfiled silently: the worst
		at("broke", "People", low, "Ideas", 0.4),              // right, now wrong but asked
		at("unsure", "People", classified, "People", 0.7),
		at("fix", "People", classified, "People", 0.9),
		at("sway", "People", classified, "Admin", 0.9),
		at("wrong-less-sure", "People", classified, "Ideas", 0.7),
		at("wrong-still-asked", "People", low, "Ideas", 0.3),
	}
	var got []string
	for _, c := range eval.Compare(base, cand, eval.DefaultConfidenceDrop) {
		got = append(got, string(c.Kind)+":"+c.Case.ID)
	}
	want := "broken_silently:misfiled broken:broke stopped_asking:silenced confidence_drop:unsure fixed:fix now_asked:asked changed:sway"
	if strings.Join(got, " ") != want {
		t.Errorf("changes %v\nwant      %s", got, want)
	}
	rep := eval.NewReport(eval.ReportConfig{RunID: "eval-x", Corpus: "c.jsonl"},
		&eval.Pass{Instructions: "new.txt", Results: cand}, &eval.Pass{Instructions: "agent", Results: base})
	var md bytes.Buffer
	if err := rep.Write(&md, eval.FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Changed cases (7): 1 broken silently, 1 broken, 1 stopped asking, 1 confidence drop, 1 fixed, 1 now asked, 1 changed",
		"| stopped_asking | silenced | text silenced | Ideas | ✗ Projects low_confidence 0.54 | ✗ Projects classified 0.81 |",
		"Worst first:"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, md.String())
		}
	}
}

// captureFunc is a Capturer in a function.
type captureFunc func(context.Context, brainwire.Capture) (brainwire.CaptureResult, error)

func (f captureFunc) Capture(ctx context.Context, c brainwire.Capture) (brainwire.CaptureResult, error) {
	return f(ctx, c)
}

// TestRunBoundsConcurrencyAndStopsOnRefusals checks the runner against a
// fake capture service: never more captures in flight than asked,
// progress for each, and a refused capture fails the pass with what the
// service said.
func TestRunBoundsConcurrencyAndStopsOnRefusals(t *testing.T) {
	cases := make([]eval.Case, 12)
	for i := range cases {
		cases[i] = eval.Case{ID: string(rune('a' + i)), Text: "x", ExpectedBucket: "People"}
	}
	var inFlight, peak atomic.Int32
	open := func(_ context.Context, _ string, obs brainwire.Observer) (eval.Target, error) {
		run := captureFunc(func(ctx context.Context, c brainwire.Capture) (brainwire.CaptureResult, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			_, co := obs.StartCapture(ctx, c)
			time.Sleep(5 * time.Millisecond)
			res := brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, Bucket: "People", Confidence: 0.9}
			co.End(res)
			return res, nil
		})
		return eval.Target{Captures: run}, nil
	}
	var progress []int
	passes, err := eval.Run(t.Context(), eval.Config{Cases: cases, RunID: "eval-t", Concurrency: 3,
		Progress: func(done, total int) { progress = append(progress, done) }}, open, eval.Side{Label: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	p := passes[0]
	if peak.Load() > 3 || peak.Load() < 2 {
		t.Errorf("peak in flight %d, want at most 3 (and some overlap)", peak.Load())
	}
	if len(progress) != 12 || progress[11] != 12 {
		t.Errorf("progress %v", progress)
	}
	if m := eval.Summarize(p.Results); m.Correct != 12 || p.Results[0].RunID != "eval-t-agent-1" {
		t.Errorf("results %+v", p.Results[0])
	}

	refuse := func(context.Context, string, brainwire.Observer) (eval.Target, error) {
		return eval.Target{Captures: captureFunc(func(context.Context, brainwire.Capture) (brainwire.CaptureResult, error) {
			return brainwire.CaptureResult{}, brainwire.Errorf(brainwire.EUnavailable, "this server's store keeps no idempotency keys")
		})}, nil
	}
	if _, err := eval.Run(t.Context(), eval.Config{Cases: cases, RunID: "eval-t"}, refuse, eval.Side{Label: "agent"}); err == nil ||
		!strings.Contains(err.Error(), "keeps no idempotency keys") {
		t.Errorf("refused captures: %v", err)
	}
}
