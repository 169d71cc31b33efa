package eval

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval/stats"
)

// DefaultConfidenceDrop is how far a case's confidence in the same bucket
// may fall before the case is listed as a regression.
const DefaultConfidenceDrop = 0.2

// Alpha is the significance level of every test and the complement of
// every interval's coverage.
const Alpha = 0.05

// bootstrapResamples is how many resamples the difference's interval is
// drawn from, and permutationResamples how many sign flips its test
// samples past 20 cases that changed, from a fixed seed: the same runs
// give the same report.
const (
	bootstrapResamples   = 4000
	permutationResamples = 20000
	bootstrapSeed        = 1
)

// minTimingTrials is the fewest trials a side with which a case's timing
// can test significant at Alpha (exact Mann–Whitney: 2/70 with 4 and 4).
const minTimingTrials = 4

// ChangeKind says how a case's answer changed from the baseline.
type ChangeKind string

// Change kinds, in the order reports list them: regressions, worst first,
// then improvements, best first, then the rest. They rank what the person
// is left with: a right answer; a wrong one they are asked about (low
// confidence, a question, no filing, an error); a wrong filing made
// without asking (classified), which they live with unawares. A case is
// listed once, under the first kind that applies.
const (
	// BrokenSilently: right with the baseline, now filed wrong without
	// asking.
	BrokenSilently ChangeKind = "broken_silently"
	// Broken: right with the baseline, now wrong, the person asked.
	Broken ChangeKind = "broken"
	// StoppedAsking: wrong on both sides, the person asked with the
	// baseline, now filed wrong without asking.
	StoppedAsking ChangeKind = "stopped_asking"
	// FewerRight: fewer of the case's trials right, the majority's answer
	// no worse.
	FewerRight ChangeKind = "fewer_right"
	// ConfidenceDrop: right on both sides in the same bucket, with a
	// confidence lower by the threshold or more.
	ConfidenceDrop ChangeKind = "confidence_drop"
	// Fixed: wrong with the baseline, right now.
	Fixed ChangeKind = "fixed"
	// NowAsked: wrong on both sides, filed without asking with the
	// baseline, now the person is asked.
	NowAsked ChangeKind = "now_asked"
	// MoreRight: more of the case's trials right, the majority's answer
	// no better.
	MoreRight ChangeKind = "more_right"
	// Changed: a different answer, as right or as wrong to the person.
	Changed ChangeKind = "changed"
)

var kindOrder = []ChangeKind{BrokenSilently, Broken, StoppedAsking, FewerRight, ConfidenceDrop, Fixed, NowAsked, MoreRight, Changed}

// Change is a case whose answer differs between baseline and candidate.
type Change struct {
	Kind      ChangeKind `json:"kind"`
	Case      Case       `json:"case"`
	Baseline  Answer     `json:"baseline"`
	Candidate Answer     `json:"candidate"`
}

// Answer is what a pass made of a case over its trials: the answer given
// most often (outcome and bucket; ties to the earlier trial), the mean
// confidence of the runs that gave it, whether most trials were right,
// and every run.
type Answer struct {
	Outcome brainwire.Outcome `json:"outcome"`
	Bucket  string            `json:"bucket,omitempty"`
	// Confidence is the mean over the runs that gave this answer (0
	// without a bucket): a majority filed without asking shows a
	// confidence that filed it.
	Confidence float64 `json:"confidence"`
	// Correct: more than half the trials were right.
	Correct bool `json:"correct"`
	// RunID is the first run that gave this answer.
	RunID         string `json:"run_id"`
	Trials        int    `json:"trials"`
	CorrectTrials int    `json:"correct_trials"`
	// Agreed: every trial gave this answer.
	Agreed bool    `json:"agreed"`
	Runs   []Trial `json:"runs"`
}

// answerKey is what makes two runs' answers the same.
func answerKey(t Trial) string {
	if t.Outcome.Resolved() {
		return string(t.Outcome) + " " + t.Bucket
	}
	return string(t.Outcome)
}

func answerOf(runs []Result) Answer {
	a := Answer{Trials: len(runs), CorrectTrials: countCorrect(runs)}
	count := map[string]int{}
	top := 0
	for _, r := range runs {
		k := answerKey(r.Trial)
		count[k]++
		top = max(top, count[k])
		a.Runs = append(a.Runs, r.Trial)
	}
	for _, r := range runs {
		if count[answerKey(r.Trial)] == top {
			a.Outcome, a.RunID = r.Outcome, r.RunID
			if r.Outcome.Resolved() {
				a.Bucket = r.Bucket
			}
			break
		}
	}
	var confs []float64
	for _, r := range runs {
		if a.Bucket != "" && answerKey(r.Trial) == answerKey(Trial{Outcome: a.Outcome, Bucket: a.Bucket}) {
			confs = append(confs, r.Conf)
		}
	}
	if len(confs) > 0 {
		a.Confidence = mean(confs)
	}
	a.Correct = 2*a.CorrectTrials > a.Trials
	a.Agreed = top == len(runs)
	return a
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// byCase groups results by case, in the order cases first appear.
func byCase(results []Result) [][]Result {
	var out [][]Result
	at := map[string]int{}
	for _, r := range results {
		i, ok := at[r.Case.ID]
		if !ok {
			i = len(out)
			at[r.Case.ID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// casePair is a case's runs on each side.
type casePair struct{ base, cand []Result }

// pairByCase pairs the passes' runs case by case (same corpus), in corpus
// order.
func pairByCase(baseline, candidate []Result) []casePair {
	base, cand := byCase(baseline), byCase(candidate)
	out := make([]casePair, min(len(base), len(cand)))
	for i := range out {
		out[i] = casePair{base[i], cand[i]}
	}
	return out
}

// standing is what an answer leaves the person with, the best first.
type standing int

const (
	right  standing = iota
	asked           // wrong, and the person is asked (or told)
	silent          // filed wrong without asking
)

func standingOf(a Answer) standing {
	switch {
	case a.Correct:
		return right
	case a.Outcome == brainwire.OutcomeClassified && !slices.ContainsFunc(a.Runs, func(t Trial) bool { return t.RunID == a.RunID && t.Correct }):
		return silent
	}
	return asked
}

// Compare lists the distinct cases whose answer or right trials differ
// between the passes (same corpus), each under the first ChangeKind that
// applies, in the kinds' order and then in corpus order. drop is the fall
// in confidence that makes a ConfidenceDrop.
func Compare(baseline, candidate []Result, drop float64) []Change {
	var out []Change
	for _, p := range pairByCase(baseline, candidate) {
		b, c := answerOf(p.base), answerOf(p.cand)
		bs, cs := standingOf(b), standingOf(c)
		var kind ChangeKind
		switch {
		case bs == right && cs == silent:
			kind = BrokenSilently
		case bs == right && cs != right:
			kind = Broken
		case bs == asked && cs == silent:
			kind = StoppedAsking
		case c.CorrectTrials < b.CorrectTrials:
			kind = FewerRight
		case bs == right && cs == right && b.Bucket != "" && b.Bucket == c.Bucket && b.Confidence-c.Confidence >= drop-1e-9:
			kind = ConfidenceDrop
		case bs != right && cs == right:
			kind = Fixed
		case bs == silent && cs == asked:
			kind = NowAsked
		case c.CorrectTrials > b.CorrectTrials:
			kind = MoreRight
		case answerKey(Trial{Outcome: b.Outcome, Bucket: b.Bucket}) != answerKey(Trial{Outcome: c.Outcome, Bucket: c.Bucket}):
			kind = Changed
		default:
			continue
		}
		out = append(out, Change{Kind: kind, Case: p.cand[0].Case, Baseline: b, Candidate: c})
	}
	slices.SortStableFunc(out, func(a, b Change) int {
		return slices.Index(kindOrder, a.Kind) - slices.Index(kindOrder, b.Kind)
	})
	return out
}

// ChangeCount counts the changed cases of one kind, and how many distinct
// texts they are (a corpus may hold the same capture more than once).
type ChangeCount struct {
	Kind  ChangeKind `json:"kind"`
	Cases int        `json:"cases"`
	Texts int        `json:"distinct_texts"`
}

func countChanges(changes []Change) []ChangeCount {
	var out []ChangeCount
	for _, k := range kindOrder {
		texts := map[string]bool{}
		n := 0
		for _, c := range changes {
			if c.Kind == k {
				n++
				texts[strings.ToLower(oneLine(c.Case.Text))] = true
			}
		}
		if n > 0 {
			out = append(out, ChangeCount{Kind: k, Cases: n, Texts: len(texts)})
		}
	}
	return out
}

// Interval is an estimate with its interval, and how it was made.
type Interval struct {
	Estimate float64 `json:"estimate"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	Method   string  `json:"method"`
	// EffectiveRuns, for an accuracy over trials, is how many independent
	// runs its runs count as.
	EffectiveRuns float64 `json:"effective_runs,omitempty"`
}

// accuracyInterval is a pass's accuracy with its Wilson interval, the
// trials of a case counted as the correlated runs they are.
func accuracyInterval(results []Result) Interval {
	cases := byCase(results)
	correct := make([]int, len(cases))
	trials := 1
	for i, runs := range cases {
		trials = len(runs)
		correct[i] = countCorrect(runs)
	}
	c := stats.ClusteredWilson(correct, trials, stats.Z95)
	iv := Interval{Estimate: c.Estimate, Low: c.Low, High: c.High, Method: "95% Wilson score interval"}
	if trials > 1 {
		iv.Method += ", a case's trials counted as correlated runs (Kish's effective sample size)"
		iv.EffectiveRuns = c.EffectiveSize
	}
	return iv
}

// Verdict is what the paired comparison concludes.
type Verdict string

// Verdicts.
const (
	Better             Verdict = "better"
	Worse              Verdict = "worse"
	NotDistinguishable Verdict = "not distinguishable"
)

// Comparison is the candidate's accuracy against the baseline's, paired
// by case.
type Comparison struct {
	// Difference is the candidate's accuracy minus the baseline's, with a
	// bootstrap interval over cases.
	Difference Interval `json:"difference"`
	// CasesBetter and CasesWorse count the cases with more (fewer)
	// correct trials with the candidate.
	CasesBetter int `json:"cases_better"`
	CasesWorse  int `json:"cases_worse"`
	// Test names the test of the per-case differences: McNemar's exact
	// test with one trial, else the paired permutation test (each case's
	// difference as likely to have the other sign); PValue is its
	// two-sided p-value.
	Test   string  `json:"test"`
	PValue float64 `json:"p_value"`
	Alpha  float64 `json:"alpha"`
	// Verdict is better or worse when the test is significant at Alpha.
	Verdict Verdict `json:"verdict"`
}

func compareAccuracy(baseline, candidate []Result) Comparison {
	var c Comparison
	var diffs []float64
	trials := 1
	for _, p := range pairByCase(baseline, candidate) {
		trials = len(p.cand)
		d := float64(countCorrect(p.cand))/float64(len(p.cand)) - float64(countCorrect(p.base))/float64(len(p.base))
		diffs = append(diffs, d)
		switch {
		case d > 0:
			c.CasesBetter++
		case d < 0:
			c.CasesWorse++
		}
	}
	lo, hi := stats.BootstrapMean(diffs, bootstrapResamples, Alpha, bootstrapSeed)
	c.Difference = Interval{Estimate: mean(diffs), Low: lo, High: hi,
		Method: fmt.Sprintf("95%% percentile bootstrap over cases, pairs kept, %d resamples", bootstrapResamples)}
	c.Test = "McNemar's exact test"
	if trials > 1 {
		c.Test = "paired permutation test over cases"
	}
	c.PValue, c.Alpha = stats.PairedPermutation(diffs, permutationResamples, bootstrapSeed), Alpha
	c.Verdict = VerdictOf(c.PValue, c.CasesBetter, c.CasesWorse)
	return c
}

// VerdictOf is a paired test's verdict: better or worse (by which way
// more pairs went) when its p-value is below Alpha.
func VerdictOf(p float64, better, worse int) Verdict {
	switch {
	case p >= Alpha:
		return NotDistinguishable
	case better > worse:
		return Better
	}
	return Worse
}

func countCorrect(runs []Result) int {
	n := 0
	for _, r := range runs {
		if r.Correct {
			n++
		}
	}
	return n
}

// Timing compares time to outcome: overall, paired by case; and case by
// case, when there are trials enough.
type Timing struct {
	// MedianDifferenceMS is the median over cases of the candidate's
	// median time minus the baseline's.
	MedianDifferenceMS float64 `json:"median_difference_ms"`
	CasesFaster        int     `json:"cases_faster"`
	CasesSlower        int     `json:"cases_slower"`
	Test               string  `json:"test"`
	PValue             float64 `json:"p_value"`
	// Real says the overall difference is significant at Alpha.
	Real bool `json:"real"`
	// CaseTest names the per-case test; CasesTested how many cases it
	// ran on (none with fewer than 4 trials a side).
	CaseTest    string `json:"case_test"`
	CasesTested int    `json:"cases_tested"`
	// Cases are the cases whose time changed significantly, after the
	// correction for testing them all: an empty list when none did (or
	// none was tested).
	Cases []CaseTiming `json:"cases"`
}

// CaseTiming is one case whose time to outcome changed.
type CaseTiming struct {
	Case        string  `json:"case"`
	BaselineMS  float64 `json:"baseline_median_ms"`
	CandidateMS float64 `json:"candidate_median_ms"`
	PValue      float64 `json:"p_value"`
	// QValue is the p-value adjusted for testing every case
	// (Benjamini–Hochberg); the case is listed when it is below Alpha.
	QValue float64 `json:"q_value"`
}

func compareTiming(baseline, candidate []Result) Timing {
	t := Timing{Test: "exact sign test over cases, on each case's median",
		CaseTest: "Mann–Whitney U per case, Benjamini–Hochberg adjusted", Cases: []CaseTiming{}}
	var diffs, ps []float64
	var tested []CaseTiming
	for _, pair := range pairByCase(baseline, candidate) {
		b, c := millis(pair.base), millis(pair.cand)
		bm, cm := stats.Median(b), stats.Median(c)
		diffs = append(diffs, cm-bm)
		switch {
		case cm > bm:
			t.CasesSlower++
		case cm < bm:
			t.CasesFaster++
		}
		if len(b) >= minTimingTrials && len(c) >= minTimingTrials {
			p := stats.MannWhitney(b, c)
			ps = append(ps, p)
			tested = append(tested, CaseTiming{Case: pair.cand[0].Case.ID, BaselineMS: bm, CandidateMS: cm, PValue: p})
		}
	}
	t.MedianDifferenceMS = stats.Median(diffs)
	t.PValue = stats.SignTest(t.CasesSlower, t.CasesFaster)
	t.Real = t.PValue < Alpha
	t.CasesTested = len(tested)
	for i, q := range stats.BenjaminiHochberg(ps) {
		if q < Alpha {
			tested[i].QValue = q
			t.Cases = append(t.Cases, tested[i])
		}
	}
	slices.SortStableFunc(t.Cases, func(a, b CaseTiming) int { return cmp.Compare(a.QValue, b.QValue) })
	return t
}

func millis(runs []Result) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = float64(r.TimeToOutcome) / float64(time.Millisecond)
	}
	return out
}

// agreed counts the cases every trial of which gave the same answer.
func agreed(results []Result) int {
	n := 0
	for _, runs := range byCase(results) {
		if answerOf(runs).Agreed {
			n++
		}
	}
	return n
}
