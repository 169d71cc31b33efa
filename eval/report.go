package eval

import (
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"strings"
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

// PassReport is one pass as the report shows it.
type PassReport struct {
	Instructions     string  `json:"instructions"`
	AgentID          string  `json:"agent_id,omitempty"`
	AgentVersion     string  `json:"agent_version,omitempty"`
	InstructionsHash string  `json:"instructions_hash,omitempty"`
	Model            string  `json:"model,omitempty"`
	ElapsedSeconds   float64 `json:"elapsed_seconds"`
	Metrics          Metrics `json:"metrics"`
	// AccuracyInterval is Metrics.Accuracy with its interval.
	AccuracyInterval Interval `json:"accuracy_interval"`
	// CasesAgreed counts the cases every trial of which gave the same
	// answer (all of them, with one trial).
	CasesAgreed int `json:"cases_agreed"`
}

func passReport(p *Pass) PassReport {
	return PassReport{
		Instructions: p.Instructions, AgentID: p.Agent.ID, AgentVersion: p.Agent.Version,
		InstructionsHash: p.Agent.InstructionsHash, Model: p.Agent.Model,
		ElapsedSeconds: math.Round(p.Elapsed.Seconds()*1000) / 1000, Metrics: Summarize(p.Results),
		AccuracyInterval: accuracyInterval(p.Results), CasesAgreed: agreed(p.Results),
	}
}

// ReportConfig says how to report an evaluation.
type ReportConfig struct {
	// RunID is the evaluation's; Corpus names the corpus it ran.
	RunID, Corpus string
	// MinAccuracy is the accuracy the candidate must reach (0: none).
	MinAccuracy float64
	// ConfidenceDrop is the fall in a case's confidence, in the same
	// bucket, listed as a regression (DefaultConfidenceDrop when 0).
	ConfidenceDrop float64
	// TraceURL, when set, makes each run's trace a link: {trace_id} is
	// replaced by the run's trace id.
	TraceURL string
}

// TraceIDPlaceholder is what ReportConfig.TraceURL's trace id replaces.
const TraceIDPlaceholder = "{trace_id}"

// TraceURL links trace traceID by template (TraceIDPlaceholder replaced by
// the id); "" when either is empty.
func TraceURL(template, traceID string) string {
	if template == "" || traceID == "" {
		return ""
	}
	return strings.ReplaceAll(template, TraceIDPlaceholder, url.PathEscape(traceID))
}

// Report is an evaluation's outcome.
type Report struct {
	RunID  string `json:"eval_run_id"`
	Corpus string `json:"corpus"`
	Cases  int    `json:"cases"`
	// Trials is how many times each case ran on each side.
	Trials    int         `json:"trials"`
	Candidate PassReport  `json:"candidate"`
	Baseline  *PassReport `json:"baseline,omitempty"`
	// Comparison pairs the passes case by case, with a verdict.
	Comparison *Comparison `json:"comparison,omitempty"`
	// Timing compares their time to outcome.
	Timing *Timing `json:"timing,omitempty"`
	// ConfidenceDrop is the threshold of the confidence_drop changes.
	ConfidenceDrop float64 `json:"confidence_drop,omitempty"`
	// Changes are the distinct cases whose answer the candidate changed;
	// ChangeCounts count them by kind.
	Changes      []Change      `json:"changes,omitempty"`
	ChangeCounts []ChangeCount `json:"change_counts,omitempty"`
	// TraceURL is the template of the runs' trace links.
	TraceURL string `json:"trace_url,omitempty"`
	// Results are the candidate's runs, case by case and trial by trial;
	// BaselineResults the baseline's.
	Results         []Result `json:"results"`
	BaselineResults []Result `json:"baseline_results,omitempty"`
	// MinAccuracy is the accuracy the candidate must reach (0: none);
	// Passed says whether it did.
	MinAccuracy float64 `json:"min_accuracy,omitempty"`
	Passed      bool    `json:"passed"`
}

// NewReport builds the report of a candidate pass and, when not nil, its
// baseline. It sets the runs' trace links.
func NewReport(cfg ReportConfig, candidate, baseline *Pass) *Report {
	cases := byCase(candidate.Results)
	r := &Report{RunID: cfg.RunID, Corpus: cfg.Corpus, Cases: len(cases), Trials: 1,
		MinAccuracy: cfg.MinAccuracy, TraceURL: cfg.TraceURL}
	if len(cases) > 0 {
		r.Trials = len(cases[0])
	}
	r.Results = linkTraces(candidate.Results, cfg.TraceURL)
	r.Candidate = passReport(candidate)
	if baseline != nil {
		r.BaselineResults = linkTraces(baseline.Results, cfg.TraceURL)
		b := passReport(baseline)
		r.Baseline = &b
		r.ConfidenceDrop = cfg.ConfidenceDrop
		if r.ConfidenceDrop <= 0 {
			r.ConfidenceDrop = DefaultConfidenceDrop
		}
		r.Changes = Compare(r.BaselineResults, r.Results, r.ConfidenceDrop)
		r.ChangeCounts = countChanges(r.Changes)
		c := compareAccuracy(r.BaselineResults, r.Results)
		r.Comparison = &c
		t := compareTiming(r.BaselineResults, r.Results)
		r.Timing = &t
	}
	r.Passed = r.Candidate.Metrics.Accuracy >= cfg.MinAccuracy
	return r
}

// linkTraces sets each traced run's link from template.
func linkTraces(results []Result, template string) []Result {
	if template == "" {
		return results
	}
	for i := range results {
		results[i].TraceURL = TraceURL(template, results[i].TraceID)
	}
	return results
}
