package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/eval/stats"
)

// synth makes a pass of n cases × trials runs: a case expects People, and
// a run is filed there when right(case, trial), else in Ideas, with
// confidence conf and time to outcome ms.
func synth(n, trials int, right func(c, t int) bool, conf, ms func(c, t int) float64) []eval.Result {
	var out []eval.Result
	for c := range n {
		cs := eval.Case{ID: fmt.Sprintf("c%02d", c), Text: fmt.Sprintf("capture %d", c), ExpectedBucket: "People"}
		for t := range trials {
			bucket := "Ideas"
			if right(c, t) {
				bucket = "People"
			}
			cf := conf(c, t)
			outcome := brainwire.OutcomeClassified
			if cf < brainwire.ConfidenceThreshold {
				outcome = brainwire.OutcomeLowConfidence
			}
			out = append(out, eval.Result{Case: cs, Trial: eval.Trial{N: t + 1, Outcome: outcome, Bucket: bucket, Conf: cf,
				Correct: bucket == "People", RunID: fmt.Sprintf("run-%d-%d", c, t),
				TimeToOutcome: time.Duration(ms(c, t) * float64(time.Millisecond))}})
		}
	}
	return out
}

func sure(c, t int) float64 { return 0.9 }

// jitter is a fixed spread of times around 20 ms, the same multiset for
// every case.
func jitter(c, t int) float64 { return 20 + float64((c*7+t*3)%5) }

func report(base, cand []eval.Result) *eval.Report {
	return eval.NewReport(eval.ReportConfig{RunID: "eval-t", Corpus: "c.jsonl"},
		&eval.Pass{Instructions: "new.txt", Results: cand}, &eval.Pass{Instructions: "agent", Results: base})
}

// TestVerdict checks the paired comparison on passes that are clearly
// better, clearly worse and indistinguishable, with one trial (McNemar's
// exact test) and with five (the paired permutation test).
func TestVerdict(t *testing.T) {
	upTo := func(k int) func(c, t int) bool { return func(c, _ int) bool { return c < k } }
	// 5 fixed (35..39) and 5 broken (40..44): as many either way.
	swapped := func(c, _ int) bool { return c < 35 || (c >= 40 && c < 45) }
	// Five trials, one of them wrong on every case but the last 15,
	// which are all wrong: noise around a real gap.
	noisy := func(k int) func(c, t int) bool { return func(c, t int) bool { return c < k && (c+t)%5 != 0 } }
	for _, tc := range []struct {
		name       string
		trials     int
		base, cand func(c, t int) bool
		want       eval.Verdict
		better     int
		worse      int
		test       string
	}{
		{"clearly better", 1, upTo(30), upTo(45), eval.Better, 15, 0, "McNemar's exact test"},
		{"clearly worse", 1, upTo(45), upTo(30), eval.Worse, 0, 15, "McNemar's exact test"},
		{"as many fixed as broken", 1, upTo(40), swapped, eval.NotDistinguishable, 5, 5, "McNemar's exact test"},
		{"a small gain", 1, upTo(40), upTo(43), eval.NotDistinguishable, 3, 0, "McNemar's exact test"},
		{"clearly better over trials", 5, noisy(30), noisy(45), eval.Better, 15, 0, "paired permutation test over cases"},
		{"clearly worse over trials", 5, noisy(45), noisy(30), eval.Worse, 0, 15, "paired permutation test over cases"},
		{"noise over trials", 5, func(c, t int) bool { return (c+t)%4 != 0 }, func(c, t int) bool { return (c+t+1)%4 != 0 },
			eval.NotDistinguishable, -1, -1, "paired permutation test over cases"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := report(synth(50, tc.trials, tc.base, sure, jitter), synth(50, tc.trials, tc.cand, sure, jitter))
			c := rep.Comparison
			if c.Verdict != tc.want || c.Test != tc.test {
				t.Fatalf("verdict %q by %s (p %v), want %q by %s", c.Verdict, c.Test, c.PValue, tc.want, tc.test)
			}
			if tc.better >= 0 && (c.CasesBetter != tc.better || c.CasesWorse != tc.worse) {
				t.Errorf("cases better %d, worse %d; want %d and %d", c.CasesBetter, c.CasesWorse, tc.better, tc.worse)
			}
			if tc.trials == 1 {
				near(t, "p", c.PValue, stats.SignTest(c.CasesBetter, c.CasesWorse), 1e-12)
			}
			d := c.Difference
			if diff := rep.Candidate.Metrics.Accuracy - rep.Baseline.Metrics.Accuracy; math.Abs(d.Estimate-diff) > 1e-9 {
				t.Errorf("difference %v, the accuracies differ by %v", d.Estimate, diff)
			}
			if d.Low > d.Estimate || d.High < d.Estimate {
				t.Errorf("interval %v–%v around %v", d.Low, d.High, d.Estimate)
			}
			if (tc.want == eval.Better && d.Low <= 0) || (tc.want == eval.Worse && d.High >= 0) {
				t.Errorf("%s, but the interval %v–%v holds 0", tc.want, d.Low, d.High)
			}
			for _, p := range []eval.PassReport{rep.Candidate, *rep.Baseline} {
				iv := p.AccuracyInterval
				if iv.Estimate != p.Metrics.Accuracy || iv.Low > iv.Estimate || iv.High < iv.Estimate {
					t.Errorf("accuracy %v, interval %+v", p.Metrics.Accuracy, iv)
				}
			}
		})
	}
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestCompareOverTrials checks that changes are of distinct cases, decided
// by the majority of their trials, that every case whose right trials
// changed is listed (the cases the verdict counts better and worse), that
// a confidence drop in the same bucket is a regression even when every
// trial is right, and that repeated texts are counted once among the
// distinct texts.
func TestCompareOverTrials(t *testing.T) {
	base := synth(6, 3, func(c, t int) bool { return c != 1 && (c != 5 || t != 0) }, sure, jitter)
	cand := synth(6, 3, func(c, t int) bool {
		switch c {
		case 0:
			return t != 0 // 2 of 3: still right, one trial fewer
		case 1:
			return true // fixed
		case 2, 3:
			return false // broken
		}
		return true
	}, func(c, t int) float64 {
		if c == 4 {
			return 0.55 // 0.9 -> 0.55: the bucket holds, the confidence falls
		}
		return 0.9
	}, jitter)
	for i := range cand { // case 3 is the same capture as case 2
		if cand[i].Case.ID == "c03" {
			cand[i].Case.Text = " Capture  2"
		}
	}
	rep := report(base, cand)
	var got []string
	for _, c := range rep.Changes {
		got = append(got, fmt.Sprintf("%s:%s:%d/%d", c.Kind, c.Case.ID, c.Candidate.CorrectTrials, c.Candidate.Trials))
		if len(c.Baseline.Runs) != 3 || len(c.Candidate.Runs) != 3 {
			t.Errorf("%s: runs %d and %d, want every trial", c.Case.ID, len(c.Baseline.Runs), len(c.Candidate.Runs))
		}
	}
	want := "broken_silently:c02:0/3 broken_silently:c03:0/3 fewer_right:c00:2/3 confidence_drop:c04:3/3 fixed:c01:3/3 more_right:c05:3/3"
	if strings.Join(got, " ") != want {
		t.Errorf("changes %v, want %s", got, want)
	}
	counts := map[eval.ChangeKind]eval.ChangeCount{}
	for _, c := range rep.ChangeCounts {
		counts[c.Kind] = c
	}
	if b := counts[eval.BrokenSilently]; b.Cases != 2 || b.Texts != 1 {
		t.Errorf("broken silently %+v: want 2 cases, 1 distinct text", b)
	}
	better, worse := 0, 0
	for _, c := range rep.Changes {
		switch d := c.Candidate.CorrectTrials - c.Baseline.CorrectTrials; {
		case d > 0:
			better++
		case d < 0:
			worse++
		}
	}
	if better != rep.Comparison.CasesBetter || worse != rep.Comparison.CasesWorse {
		t.Errorf("changes list %d cases better and %d worse, the verdict counts %d and %d",
			better, worse, rep.Comparison.CasesBetter, rep.Comparison.CasesWorse)
	}
	var text bytes.Buffer
	if err := rep.Write(&text, eval.FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Changed cases (6): 2 broken silently (1 distinct text), 1 fewer right, 1 confidence drop, 1 fixed, 1 more right",
		"✓ 3/3 People low_confidence 0.55", "cases whose trials agreed", "2 cases better and 3 worse"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
	// The threshold is the caller's: above the drop, the case only
	// changed outcome.
	for _, c := range eval.Compare(base, cand, 0.4) {
		if c.Case.ID == "c04" && c.Kind != eval.Changed {
			t.Errorf("a drop of 0.35 at a threshold of 0.4: %s", c.Kind)
		}
	}
}

// TestShownConfidenceIsTheShownAnswers checks that a case's answer shows
// the mean confidence of the runs that gave it: a majority filed without
// asking never shows a confidence below the threshold.
func TestShownConfidenceIsTheShownAnswers(t *testing.T) {
	confs := []float64{0.8, 0.75, 0.3, 0.7, 0.2} // three classified, two low
	runs := synth(1, 5, func(int, int) bool { return false }, func(_, t int) float64 { return confs[t] }, jitter)
	rep := eval.NewReport(eval.ReportConfig{RunID: "eval-t", Corpus: "c.jsonl"}, &eval.Pass{Instructions: "agent", Results: runs}, nil)
	var out bytes.Buffer
	if err := rep.Write(&out, eval.FormatTable); err != nil {
		t.Fatal(err)
	}
	if want := "✗ 0/5 Ideas classified 0.75"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}

// TestZeroDifferenceIsZero checks that a difference of zero, left a few
// ulps below it by summing fifths, is written as zero, not "-0.000".
func TestZeroDifferenceIsZero(t *testing.T) {
	// Case 0 gains three right trials of five, cases 1–3 lose one each.
	base := synth(4, 5, func(c, t int) bool { return c > 0 && t == 0 }, sure, jitter)
	cand := synth(4, 5, func(c, t int) bool { return c == 0 && t < 3 }, sure, jitter)
	rep := report(base, cand)
	for _, format := range []string{eval.FormatTable, eval.FormatMarkdown, eval.FormatHTML} {
		var out bytes.Buffer
		if err := rep.Write(&out, format); err != nil {
			t.Fatal(err)
		}
		page := html.UnescapeString(out.String()) // the page writes + as &#43;
		if strings.Contains(page, "-0.000") || !strings.Contains(page, "+0.000") {
			t.Errorf("%s: a zero difference (%v) written with a sign:\n%s", format, rep.Comparison.Difference.Estimate, page)
		}
	}
}

// TestTimingCasesIsAList checks that the JSON report's timing.cases is a
// list whenever there is timing, empty when no case changed.
func TestTimingCasesIsAList(t *testing.T) {
	right := func(int, int) bool { return true }
	for _, trials := range []int{1, 5} {
		var out bytes.Buffer
		if err := report(synth(5, trials, right, sure, jitter), synth(5, trials, right, sure, jitter)).Write(&out, eval.FormatJSON); err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Timing struct {
				Cases []any `json:"cases"`
			} `json:"timing"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Timing.Cases == nil || len(rep.Timing.Cases) != 0 {
			t.Errorf("%d trials: timing.cases %v, want an empty list", trials, rep.Timing.Cases)
		}
	}
}

// TestTiming checks that only real changes of time are reported: a
// shift of every case, a shift of a few cases among many, and none when
// both sides took the same times.
func TestTiming(t *testing.T) {
	right := func(int, int) bool { return true }
	same := synth(50, 5, right, sure, jitter)
	shifted := func(which func(c int) bool) []eval.Result {
		return synth(50, 5, right, sure, func(c, t int) float64 {
			if which(c) {
				return jitter(c, t) + 15
			}
			return jitter(c, (t+2)%5) // the same times in another order
		})
	}
	for _, tc := range []struct {
		name  string
		cand  []eval.Result
		real  bool
		cases int
	}{
		{"every case slower", shifted(func(int) bool { return true }), true, 50},
		{"ten cases slower", shifted(func(c int) bool { return c%5 == 0 }), true, 10},
		// Alone, its p of 2/252 is chance among 50 tests.
		{"one case slower", shifted(func(c int) bool { return c == 7 }), false, 0},
		{"the same times", shifted(func(int) bool { return false }), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := report(same, tc.cand)
			tm := rep.Timing
			if tm.Real != tc.real || len(tm.Cases) != tc.cases || tm.CasesTested != 50 {
				t.Fatalf("real %v (p %v), %d cases of %d: want %v and %d", tm.Real, tm.PValue, len(tm.Cases), tm.CasesTested, tc.real, tc.cases)
			}
			for _, c := range tm.Cases {
				if c.QValue >= eval.Alpha || c.CandidateMS-c.BaselineMS != 15 {
					t.Errorf("case %+v", c)
				}
			}
			var text bytes.Buffer
			if err := rep.Write(&text, eval.FormatTable); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(text.String(), "no real change"); got == tc.real {
				t.Errorf("report says \"no real change\": %v, real: %v\n%s", got, tc.real, text.String())
			}
		})
	}
	// With fewer than 4 trials no case can test significant: none is tried.
	rep := report(synth(50, 3, right, sure, jitter), synth(50, 3, right, sure, func(c, t int) float64 { return 100 }))
	if rep.Timing.CasesTested != 0 || !rep.Timing.Real {
		t.Errorf("3 trials: %+v", rep.Timing)
	}
}

// TestEveryTrialAgreed checks that the report says when the agent did not
// vary at all, and only then.
func TestEveryTrialAgreed(t *testing.T) {
	right := func(c, _ int) bool { return c%3 != 0 }
	var out bytes.Buffer
	rep := report(synth(10, 4, right, sure, jitter), synth(10, 4, right, sure, jitter))
	if err := rep.Write(&out, eval.FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Every trial agreed") || rep.Candidate.CasesAgreed != 10 {
		t.Errorf("identical trials, report:\n%s", out.String())
	}
	out.Reset()
	rep = report(synth(10, 4, right, sure, jitter), synth(10, 4, func(c, t int) bool { return right(c, t) != (t == 0 && c == 1) }, sure, jitter))
	if err := rep.Write(&out, eval.FormatTable); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Every trial agreed") || rep.Candidate.CasesAgreed != 9 {
		t.Errorf("one trial differs, cases agreed %d, report:\n%s", rep.Candidate.CasesAgreed, out.String())
	}
	// One case, one trial: singular.
	out.Reset()
	if err := report(synth(1, 1, right, sure, jitter), synth(1, 1, right, sure, jitter)).Write(&out, eval.FormatTable); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), ": 1 case from") || strings.Contains(out.String(), "1 cases") {
		t.Errorf("one case:\n%s", out.String())
	}
}

// TestTraceLinks checks that every traced run gets its link from the
// template and that the reports name the runs of changed cases.
func TestTraceLinks(t *testing.T) {
	base := synth(3, 2, func(c, _ int) bool { return c != 0 }, sure, jitter)
	cand := synth(3, 2, func(int, int) bool { return true }, sure, jitter)
	for i := range cand {
		cand[i].TraceID = fmt.Sprintf("%032x", i+1)
	}
	rep := eval.NewReport(eval.ReportConfig{RunID: "eval-t", Corpus: "c.jsonl", TraceURL: "http://jaeger:16686/trace/{trace_id}"},
		&eval.Pass{Instructions: "new.txt", Results: cand}, &eval.Pass{Instructions: "agent", Results: base})
	for _, r := range rep.Results {
		if r.TraceURL != "http://jaeger:16686/trace/"+r.TraceID {
			t.Errorf("run %s: link %q", r.RunID, r.TraceURL)
		}
	}
	for _, r := range rep.BaselineResults {
		if r.TraceURL != "" {
			t.Errorf("untraced run %s has a link %q", r.RunID, r.TraceURL)
		}
	}
	var md bytes.Buffer
	if err := rep.Write(&md, eval.FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Runs of the changed cases", "| c00 | candidate | 2 | ✓ People classified 0.90 | run-0-1 | http://jaeger:16686/trace/" + fmt.Sprintf("%032x", 2) + " |",
		"| c00 | baseline | 1 | ✗ Ideas classified 0.90 | run-0-0 | - |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// TestRunTrials runs a corpus three times a side against a fake server
// that plays telemetry's part (a trace on the capture's context) and
// streams a long reasoning: every run is kept, numbered and named apart,
// the sides interleave, each run has its trace id, and the reasoning kept
// is bounded, whole characters, beginning and end.
func TestRunTrials(t *testing.T) {
	cases := []eval.Case{{ID: "a", Text: "one", ExpectedBucket: "People"}, {ID: "b", Text: "two", ExpectedBucket: "People"}}
	var mu sync.Mutex
	var order []string
	long := "début " + strings.Repeat("é", 2000) + " fin"
	open := func(_ context.Context, instructions string, obs brainwire.Observer) (eval.Target, error) {
		run := captureFunc(func(ctx context.Context, c brainwire.Capture) (brainwire.CaptureResult, error) {
			mu.Lock()
			order = append(order, instructions)
			mu.Unlock()
			ctx = brainwire.WithRunTrace(ctx, brainwire.TraceRef{TraceID: "trace-" + c.RunID, SpanID: "s"})
			_, co := obs.StartCapture(ctx, c)
			for i := 0; i < len(long); i += 7 { // chunks that split characters
				co.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{Text: long[i:min(i+7, len(long))]}})
			}
			co.CaptureEvent(brainwire.CaptureEvent{Type: brainwire.CaptureReasoning, Chunk: brainwire.ReasoningChunk{Text: "Filed.", AfterOutcome: true}})
			res := brainwire.CaptureResult{Outcome: brainwire.OutcomeClassified, Bucket: "People", Confidence: 0.9}
			co.End(res)
			return res, nil
		})
		return eval.Target{Captures: run}, nil
	}
	passes, err := eval.Run(t.Context(), eval.Config{Cases: cases, RunID: "eval-t", Trials: 3, Concurrency: 1}, open,
		eval.Side{Label: "agent", Instructions: "A"}, eval.Side{Label: "agent", Instructions: "B"})
	if err != nil {
		t.Fatal(err)
	}
	// Case by case and trial by trial, the side that goes first changes.
	if strings.Join(order, "") != "ABBABAABABBA" {
		t.Errorf("order of the sides %q: want them to take turns going first", strings.Join(order, ""))
	}
	for i, p := range passes {
		if len(p.Results) != 6 {
			t.Fatalf("pass %d: %d results", i, len(p.Results))
		}
		for j, r := range p.Results {
			wantID := fmt.Sprintf("eval-t-agent-%d-t%d", j/3+1, j%3+1)
			if i == 1 {
				wantID = fmt.Sprintf("eval-t-agent-2-%d-t%d", j/3+1, j%3+1) // the same label: apart
			}
			if r.Case.ID != cases[j/3].ID || r.N != j%3+1 || r.RunID != wantID || r.TraceID != "trace-"+wantID {
				t.Errorf("pass %d result %d: case %s trial %d run %s trace %s; want run %s", i, j, r.Case.ID, r.N, r.RunID, r.TraceID, wantID)
			}
			if r.ReasoningBytes != len(long)+len("Filed.") {
				t.Errorf("reasoning bytes %d, want %d", r.ReasoningBytes, len(long)+len("Filed."))
			}
			if len(r.Reasoning) > eval.ExcerptBytes+len(" … ") || !utf8.ValidString(r.Reasoning) ||
				!strings.HasPrefix(r.Reasoning, "début éé") || !strings.HasSuffix(r.Reasoning, "éé fin") || !strings.Contains(r.Reasoning, " … ") {
				t.Fatalf("reasoning excerpt (%d bytes) %q", len(r.Reasoning), r.Reasoning)
			}
		}
	}
}
