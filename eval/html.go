package eval

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire"
)

// The HTML report is one page with nothing to fetch: inline CSS, SVG
// drawn here, no script. Elements that carry a figure of the JSON report
// name it in data-metric and hold its exact value in data-value, so that
// a test (or a script) can read the page against the JSON. The browser
// lays the charts out: a value is placed at its share of a plot's width
// (pct), or in the plot's own units (a viewBox).

//go:embed report.html
var reportHTML string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":    func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) },
	"pct":    func(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" },
	"f3":     func(x float64) string { return fmt.Sprintf("%.3f", x) },
	"f2":     func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"s3":     func(x float64) string { return signedText("%+.3f", x) },
	"p":      pRelation,
	"pvalue": pText,
	"ratio":  ratioText,
	"answer": answerText,
	"trial":  trialText,
	"accuracyTicks": func() []tick {
		return []tick{{0, "0%"}, {0.25, "25%"}, {0.5, "50%"}, {0.75, "75%"}, {1, "100%"}}
	},
	"confidenceTicks": func() []tick {
		return []tick{{0, "0.0"}, {0.2, "0.2"}, {0.4, "0.4"}, {0.6, "0.6"}, {0.8, "0.8"}, {1, "1.0"}}
	},
}).Parse(reportHTML))

func (r *Report) writeHTML(w io.Writer) error {
	if err := htmlTemplate.Execute(w, newHTMLView(r)); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	return nil
}

// htmlView is what the page shows, laid out.
type htmlView struct {
	R        *Report
	Sides    []sideView
	Verdict  verdictView
	Notes    []string
	Diff     *diffChart
	Matrices []matrixView
	Hist     histogram
	Cases    []caseView
	// CasesTitle heads the list of cases to look at; Legend, with a
	// baseline, says how they are ranked.
	CasesTitle, Legend string
	// All is every case, folded away, for its runs' traces.
	All []caseView
}

type sideView struct {
	Name string // baseline or candidate
	P    PassReport
}

type verdictView struct {
	Class, Headline string
}

func newHTMLView(r *Report) htmlView {
	v := htmlView{R: r, Sides: sidesOf(r), Verdict: verdictOf(r)}
	for _, note := range r.summaryNotes(func(s string) string { return s }) {
		if !strings.HasPrefix(note, "Verdict:") { // the banner says it
			v.Notes = append(v.Notes, note)
		}
	}
	if c := r.Comparison; c != nil {
		v.Diff = newDiffChart(c)
	}
	v.Matrices = newMatrices(v.Sides)
	results := [][]Result{r.Results}
	if r.Baseline != nil {
		results = [][]Result{r.BaselineResults, r.Results}
	}
	v.Hist = newHistogram(v.Sides, results)
	v.Cases, v.CasesTitle = newCaseViews(r)
	if r.Baseline != nil {
		v.Legend = r.changeLegend()
	}
	v.All = allCases(r)
	return v
}

// sidesOf is the report's passes, the baseline first.
func sidesOf(r *Report) []sideView {
	if r.Baseline == nil {
		return []sideView{{"candidate", r.Candidate}}
	}
	return []sideView{{"baseline", *r.Baseline}, {"candidate", r.Candidate}}
}

func verdictOf(r *Report) verdictView {
	c := r.Comparison
	switch {
	case c == nil:
		return verdictView{"none", fmt.Sprintf("Accuracy %.3f", r.Candidate.Metrics.Accuracy)}
	case c.Verdict == Better:
		return verdictView{verdictClass(c), "The candidate is better"}
	case c.Verdict == Worse:
		return verdictView{verdictClass(c), "The candidate is worse"}
	}
	return verdictView{verdictClass(c), "Not distinguishable"}
}

// verdictClass is the CSS class that colours a verdict.
func verdictClass(c *Comparison) string {
	if c.Verdict == NotDistinguishable {
		return "even"
	}
	return string(c.Verdict)
}

// diffChart draws the difference in accuracy with its interval on an
// axis symmetric around zero: each figure is its share of the axis.
type diffChart struct {
	At, Low, High float64
	Class         string
	Ticks         []tick
}

type tick struct {
	At    float64
	Label string
}

func newDiffChart(c *Comparison) *diffChart {
	d := c.Difference
	span := math.Max(0.1, math.Ceil(math.Max(math.Abs(d.Low), math.Abs(d.High))*10)/10)
	at := func(x float64) float64 { return (x + span) / (2 * span) }
	ch := &diffChart{At: at(d.Estimate), Low: at(d.Low), High: at(d.High), Class: verdictClass(c)}
	for _, t := range []float64{-span, -span / 2, 0, span / 2, span} {
		ch.Ticks = append(ch.Ticks, tick{At: at(t), Label: fmt.Sprintf("%+.2f", t)})
	}
	return ch
}

// matrixView is a side's confusion matrix: expected buckets down, what
// the agent did across, the shade of a cell its share of the row.
type matrixView struct {
	Side string
	Cols []string
	Rows []matrixRow
}

type matrixRow struct {
	Label string
	Cells []matrixCell
}

type matrixCell struct {
	Row, Col string
	Count    int
	Opacity  float64
	Right    bool
}

func newMatrices(sides []sideView) []matrixView {
	cm := sides[0].P.Metrics.Confusion
	// Rows and columns that hold something on some side.
	var rows, cols []int
	for i := range cm.Rows {
		for _, s := range sides {
			if slices.ContainsFunc(s.P.Metrics.Confusion.Counts[i], func(n int) bool { return n > 0 }) {
				rows = append(rows, i)
				break
			}
		}
	}
	for j := range cm.Cols {
		if j < len(brainwire.Buckets) || slices.ContainsFunc(sides, func(s sideView) bool {
			return slices.ContainsFunc(s.P.Metrics.Confusion.Counts, func(r []int) bool { return r[j] > 0 })
		}) {
			cols = append(cols, j)
		}
	}
	var out []matrixView
	for _, s := range sides {
		c := s.P.Metrics.Confusion
		m := matrixView{Side: s.Name}
		for _, j := range cols {
			m.Cols = append(m.Cols, c.Cols[j])
		}
		for _, i := range rows {
			total := 0
			for _, n := range c.Counts[i] {
				total += n
			}
			row := matrixRow{Label: c.Rows[i]}
			for _, j := range cols {
				n := c.Counts[i][j]
				op := 0.0
				if n > 0 {
					op = 0.15 + 0.85*float64(n)/float64(max(1, total))
				}
				right := c.Rows[i] == c.Cols[j] || (c.Rows[i] == NoBucket && j >= len(brainwire.Buckets))
				row.Cells = append(row.Cells, matrixCell{Row: c.Rows[i], Col: c.Cols[j], Count: n, Opacity: op, Right: right})
			}
			m.Rows = append(m.Rows, row)
		}
		out = append(out, m)
	}
	return out
}

// histogram shows how confident the filings (classified or low
// confidence) were, side by side, in bins of 0.05. Its bars are drawn in
// units of their own: a bar is barUnits wide, a bin as many bars as
// there are sides and a gap of binGap; a run is a unit high.
type histogram struct {
	// Top is the count the tallest bar stands for; Width is the bins'.
	Top, Width int
	Bins       []histBin
	Threshold  float64
	Series     []string
	Filed      []int // per side
}

type histBin struct {
	Low, High float64
	Bars      []histBar
}

type histBar struct {
	Side        string
	X, Y, Count int
}

const (
	histBins = 20 // bins of confidence
	barUnits = 10
	binGap   = 4
)

// binOf is the bin of a confidence: [k/20, (k+1)/20), 1 in the last.
func binOf(conf float64) int {
	return min(histBins-1, max(0, int(math.Floor(conf*histBins+1e-9))))
}

func newHistogram(sides []sideView, results [][]Result) histogram {
	h := histogram{Top: 1, Threshold: brainwire.ConfidenceThreshold}
	counts := make([][histBins]int, len(sides))
	for i, rs := range results {
		n := 0
		for _, r := range rs {
			if r.Outcome.Resolved() {
				counts[i][binOf(r.Conf)]++
				n++
			}
		}
		h.Filed = append(h.Filed, n)
		h.Top = max(h.Top, slices.Max(counts[i][:]))
		h.Series = append(h.Series, sides[i].Name)
	}
	binW := barUnits*len(sides) + binGap
	h.Width = histBins * binW
	for k := range histBins {
		b := histBin{Low: float64(k) / histBins, High: float64(k+1) / histBins}
		for i := range sides {
			n := counts[i][k]
			b.Bars = append(b.Bars, histBar{Side: sides[i].Name, X: k*binW + binGap/2 + i*barUnits, Y: h.Top - n, Count: n})
		}
		h.Bins = append(h.Bins, b)
	}
	return h
}

// caseView is a case to look at: a change, or (without a baseline) a
// wrong answer.
type caseView struct {
	Kind    string
	Case    Case
	Answers []answerView
}

type answerView struct {
	Side   string
	Answer Answer
	// Reasoning is the excerpt of the run that gave the answer.
	Reasoning string
}

func newCaseViews(r *Report) ([]caseView, string) {
	var out []caseView
	if r.Baseline == nil {
		for _, runs := range byCase(r.Results) {
			a := answerOf(runs)
			if a.CorrectTrials < a.Trials {
				out = append(out, caseView{Kind: "wrong", Case: runs[0].Case, Answers: []answerView{answerViewOf("candidate", a)}})
			}
		}
		return out, fmt.Sprintf("Wrong cases (%d)", len(out))
	}
	for _, c := range r.Changes {
		out = append(out, caseView{Kind: string(c.Kind), Case: c.Case,
			Answers: []answerView{answerViewOf("baseline", c.Baseline), answerViewOf("candidate", c.Candidate)}})
	}
	return out, fmt.Sprintf("Changed cases (%d)%s", len(r.Changes), r.changeSummary())
}

// allCases is every case with its answer on each side.
func allCases(r *Report) []caseView {
	var out []caseView
	if r.Baseline == nil {
		for _, runs := range byCase(r.Results) {
			out = append(out, caseView{Case: runs[0].Case, Answers: []answerView{{Side: "candidate", Answer: answerOf(runs)}}})
		}
		return out
	}
	for _, p := range pairByCase(r.BaselineResults, r.Results) {
		out = append(out, caseView{Case: p.cand[0].Case,
			Answers: []answerView{{Side: "baseline", Answer: answerOf(p.base)}, {Side: "candidate", Answer: answerOf(p.cand)}}})
	}
	return out
}

func answerViewOf(side string, a Answer) answerView {
	v := answerView{Side: side, Answer: a}
	for _, t := range a.Runs {
		if t.RunID == a.RunID {
			v.Reasoning = t.Reasoning
		}
	}
	return v
}
