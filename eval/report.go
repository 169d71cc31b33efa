package eval

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/brainwire/brainwire"
)

// NoBucket is the confusion matrix's row of cases that expect no bucket.
const NoBucket = "(no bucket)"

// Metrics summarize one pass.
type Metrics struct {
	Cases    int     `json:"cases"`
	Correct  int     `json:"correct"`
	Accuracy float64 `json:"accuracy"`
	// Buckets are the per-bucket scores, in display order.
	Buckets   []BucketScore `json:"buckets"`
	Confusion Confusion     `json:"confusion"`
	// Outcomes are the outcome rates, in display order.
	Outcomes []OutcomeRate `json:"outcomes"`
	// ReasoningBytes and ReasoningChunks are the chain-of-thought's length
	// per case.
	ReasoningBytes  Dist `json:"reasoning_bytes"`
	ReasoningChunks Dist `json:"reasoning_chunks"`
	InputTokens     Dist `json:"input_tokens"`
	OutputTokens    Dist `json:"output_tokens"`
	// TimeToOutcomeMS is how long the phone waited for its outcome.
	TimeToOutcomeMS Dist `json:"time_to_outcome_ms"`
}

// BucketScore is one bucket's precision and recall: of the captures filed
// in it, how many belonged there; of those that belonged there, how many
// were filed there. A bucket nothing was filed in (or expected in) has no
// precision (recall): NaN, rendered as "-".
type BucketScore struct {
	Bucket    string `json:"bucket"`
	Expected  int    `json:"expected"`
	Filed     int    `json:"filed"`
	Right     int    `json:"right"`
	Precision Ratio  `json:"precision"`
	Recall    Ratio  `json:"recall"`
}

// Ratio is a share that may be undefined (NaN: nothing to divide by),
// written as null in JSON.
type Ratio float64

// MarshalJSON implements json.Marshaler.
func (r Ratio) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(r)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(r))
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *Ratio) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = Ratio(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(r))
}

// Confusion counts cases by expected bucket (rows, then NoBucket) and by
// what the agent did (columns: the buckets it filed in, then the outcomes
// that put a capture in no bucket).
type Confusion struct {
	Rows   []string `json:"rows"`
	Cols   []string `json:"cols"`
	Counts [][]int  `json:"counts"`
}

// OutcomeRate is the share of cases that ended with one outcome.
type OutcomeRate struct {
	Outcome brainwire.Outcome `json:"outcome"`
	Count   int               `json:"count"`
	Rate    float64           `json:"rate"`
}

// Dist is a distribution's mean and percentiles, and its total.
type Dist struct {
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	Total float64 `json:"total"`
}

// Summarize computes a pass's metrics.
func Summarize(results []Result) Metrics {
	m := Metrics{Cases: len(results)}
	rowOf := map[string]int{}
	m.Confusion.Rows = append(slices.Clone(brainwire.Buckets), NoBucket)
	for i, r := range m.Confusion.Rows {
		rowOf[r] = i
	}
	colOf := map[string]int{}
	m.Confusion.Cols = append(slices.Clone(brainwire.Buckets), string(brainwire.OutcomeMisunderstood),
		string(brainwire.OutcomeUnresolved), string(brainwire.OutcomeError))
	for i, c := range m.Confusion.Cols {
		colOf[c] = i
	}
	m.Confusion.Counts = make([][]int, len(m.Confusion.Rows))
	for i := range m.Confusion.Counts {
		m.Confusion.Counts[i] = make([]int, len(m.Confusion.Cols))
	}
	scores := map[string]*BucketScore{}
	for _, b := range brainwire.Buckets {
		scores[b] = &BucketScore{Bucket: b}
	}
	outcomes := map[brainwire.Outcome]int{}
	var bytes, chunks, in, out, tto []float64
	for _, r := range results {
		if r.Correct {
			m.Correct++
		}
		outcomes[r.Outcome]++
		row := rowOf[NoBucket]
		if r.Case.ExpectedBucket != "" {
			row = rowOf[r.Case.ExpectedBucket]
			scores[r.Case.ExpectedBucket].Expected++
		}
		col, ok := colOf[string(r.Outcome)]
		if r.Outcome.Resolved() {
			col, ok = colOf[r.Bucket], true
			s := scores[r.Bucket]
			s.Filed++
			if r.Bucket == r.Case.ExpectedBucket {
				s.Right++
			}
		}
		if ok {
			m.Confusion.Counts[row][col]++
		}
		bytes = append(bytes, float64(r.ReasoningBytes))
		chunks = append(chunks, float64(r.ReasoningChunks))
		in = append(in, float64(r.InputTokens))
		out = append(out, float64(r.OutputTokens))
		tto = append(tto, float64(r.TimeToOutcome)/float64(time.Millisecond))
	}
	if m.Cases > 0 {
		m.Accuracy = float64(m.Correct) / float64(m.Cases)
	}
	for _, b := range brainwire.Buckets {
		s := scores[b]
		s.Precision, s.Recall = Ratio(ratio(s.Right, s.Filed)), Ratio(ratio(s.Right, s.Expected))
		m.Buckets = append(m.Buckets, *s)
	}
	for _, o := range brainwire.Outcomes {
		m.Outcomes = append(m.Outcomes, OutcomeRate{Outcome: o, Count: outcomes[o], Rate: float64(outcomes[o]) / float64(max(1, m.Cases))})
	}
	m.ReasoningBytes, m.ReasoningChunks = dist(bytes), dist(chunks)
	m.InputTokens, m.OutputTokens, m.TimeToOutcomeMS = dist(in), dist(out), dist(tto)
	return m
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// dist summarizes xs; percentiles by nearest rank.
func dist(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var d Dist
	for _, x := range s {
		d.Total += x
	}
	d.Mean = d.Total / float64(len(s))
	rank := func(p float64) float64 { return s[max(0, int(math.Ceil(p*float64(len(s))))-1)] }
	d.P50, d.P95 = rank(0.5), rank(0.95)
	return d
}

// ChangeKind says how a case's answer changed from the baseline.
type ChangeKind string

// Change kinds, in the order reports list them.
const (
	Broken  ChangeKind = "broken"  // right with the baseline, wrong now
	Fixed   ChangeKind = "fixed"   // wrong with the baseline, right now
	Changed ChangeKind = "changed" // a different answer, as right or as wrong
)

// Change is a case whose answer differs between baseline and candidate.
type Change struct {
	Kind      ChangeKind `json:"kind"`
	Case      Case       `json:"case"`
	Baseline  Answer     `json:"baseline"`
	Candidate Answer     `json:"candidate"`
}

// Answer is what a pass made of a case.
type Answer struct {
	Outcome    brainwire.Outcome `json:"outcome"`
	Bucket     string            `json:"bucket,omitempty"`
	Confidence float64           `json:"confidence"`
	Correct    bool              `json:"correct"`
	RunID      string            `json:"run_id"`
}

func answerOf(r Result) Answer {
	return Answer{Outcome: r.Outcome, Bucket: r.Bucket, Confidence: r.Conf, Correct: r.Correct, RunID: r.RunID}
}

// Compare lists the cases whose outcome, bucket or correctness differ
// between the passes (same corpus, same order): broken first, then fixed,
// then other changes, each in corpus order.
func Compare(baseline, candidate []Result) []Change {
	var out []Change
	for i := range min(len(baseline), len(candidate)) {
		b, c := baseline[i], candidate[i]
		if b.Outcome == c.Outcome && b.Bucket == c.Bucket && b.Correct == c.Correct {
			continue
		}
		kind := Changed
		switch {
		case b.Correct && !c.Correct:
			kind = Broken
		case !b.Correct && c.Correct:
			kind = Fixed
		}
		out = append(out, Change{Kind: kind, Case: c.Case, Baseline: answerOf(b), Candidate: answerOf(c)})
	}
	order := map[ChangeKind]int{Broken: 0, Fixed: 1, Changed: 2}
	slices.SortStableFunc(out, func(a, b Change) int { return order[a.Kind] - order[b.Kind] })
	return out
}

// PassReport is one pass as the report shows it.
type PassReport struct {
	Instructions     string  `json:"instructions"`
	AgentID          string  `json:"agent_id,omitempty"`
	AgentVersion     string  `json:"agent_version,omitempty"`
	InstructionsHash string  `json:"instructions_hash,omitempty"`
	Model            string  `json:"model,omitempty"`
	ElapsedSeconds   float64 `json:"elapsed_seconds"`
	Metrics          Metrics `json:"metrics"`
}

func passReport(p *Pass) PassReport {
	return PassReport{
		Instructions: p.Instructions, AgentID: p.Agent.ID, AgentVersion: p.Agent.Version,
		InstructionsHash: p.Agent.InstructionsHash, Model: p.Agent.Model,
		ElapsedSeconds: math.Round(p.Elapsed.Seconds()*1000) / 1000, Metrics: Summarize(p.Results),
	}
}

// Report is an evaluation's outcome.
type Report struct {
	RunID     string      `json:"eval_run_id"`
	Corpus    string      `json:"corpus"`
	Cases     int         `json:"cases"`
	Candidate PassReport  `json:"candidate"`
	Baseline  *PassReport `json:"baseline,omitempty"`
	// Changes are the cases whose answer the candidate changed.
	Changes []Change `json:"changes,omitempty"`
	// Results are the candidate's answers, case by case.
	Results []Result `json:"results"`
	// MinAccuracy is the accuracy the candidate must reach (0: none);
	// Passed says whether it did.
	MinAccuracy float64 `json:"min_accuracy,omitempty"`
	Passed      bool    `json:"passed"`
}

// NewReport builds the report of a candidate pass and, when not nil, its
// baseline.
func NewReport(runID, corpus string, candidate, baseline *Pass, minAccuracy float64) *Report {
	r := &Report{RunID: runID, Corpus: corpus, Cases: len(candidate.Results), Candidate: passReport(candidate),
		Results: candidate.Results, MinAccuracy: minAccuracy}
	if baseline != nil {
		b := passReport(baseline)
		r.Baseline = &b
		r.Changes = Compare(baseline.Results, candidate.Results)
	}
	r.Passed = r.Candidate.Metrics.Accuracy >= minAccuracy
	return r
}
