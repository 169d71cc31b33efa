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
// a test (or a script) can read the page against the JSON.

//go:embed report.html
var reportHTML string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":    func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) },
	"f3":     func(x float64) string { return fmt.Sprintf("%.3f", x) },
	"f2":     func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"s3":     func(x float64) string { return fmt.Sprintf("%+.3f", x) },
	"p":      pRelation,
	"pvalue": pText,
	"ratio":  ratioText,
	"answer": answerText,
	"trial":  trialText,
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
	G        geometry
	Sides    []sideView
	Verdict  verdictView
	Notes    []string
	Accuracy accuracyChart
	Matrices []matrixView
	Hist     histogram
	Cases    []caseView
	// CasesTitle heads the list of cases to look at.
	CasesTitle string
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
	v := htmlView{R: r, G: geometry{Left: labelWidth, Right: plotRight, Width: plotRight - labelWidth,
		Middle: (labelWidth + plotRight) / 2, CellW: cellW, CellH: cellH}}
	if r.Baseline != nil {
		v.Sides = append(v.Sides, sideView{"baseline", *r.Baseline})
	}
	v.Sides = append(v.Sides, sideView{"candidate", r.Candidate})
	v.Verdict = verdictOf(r)
	for _, note := range r.summaryNotes(func(s string) string { return s }) {
		if !strings.HasPrefix(note, "Verdict:") { // the banner says it
			v.Notes = append(v.Notes, note)
		}
	}
	v.Accuracy = newAccuracyChart(v.Sides, r.Comparison)
	v.Matrices = newMatrices(v.Sides)
	results := [][]Result{r.Results}
	if r.Baseline != nil {
		results = [][]Result{r.BaselineResults, r.Results}
	}
	v.Hist = newHistogram(v.Sides, results)
	v.Cases, v.CasesTitle = newCaseViews(r)
	v.All = allCases(r)
	return v
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

// Chart geometry, in SVG user units: labels left of labelWidth, plots
// from there to plotRight, figures after it.
const (
	labelWidth = 110
	plotRight  = 560
)

// geometry hands the template what it lays out by.
type geometry struct {
	Left, Right, Width, Middle, CellW, CellH int
}

// accuracyChart draws each side's accuracy as a bar with its interval,
// and the difference with its interval around zero.
type accuracyChart struct {
	Height  int
	AxisEnd float64 // where the gridlines end
	Rows    []accuracyRow
	Ticks   []tick
	Diff    *diffRow
}

type accuracyRow struct {
	Side                            string
	Y, Mid, CapTop, CapBottom, BarW float64
	X, XLow, XHigh                  float64
	Est, Low, High                  float64
}

type tick struct {
	X     float64
	Label string
}

type diffRow struct {
	Y, X, XLow, XHigh, XZero, ZeroTop, ZeroBottom float64
	Class                                         string
	Ticks                                         []tick
}

func scale(x, lo, hi float64) float64 {
	return labelWidth + (x-lo)/(hi-lo)*(plotRight-labelWidth)
}

func newAccuracyChart(sides []sideView, c *Comparison) accuracyChart {
	var ch accuracyChart
	for i, s := range sides {
		iv := s.P.AccuracyInterval
		y := float64(24 + 44*i)
		ch.Rows = append(ch.Rows, accuracyRow{Side: s.Name, Y: y, Mid: y + 10, CapTop: y + 3, CapBottom: y + 17,
			X: scale(iv.Estimate, 0, 1), XLow: scale(iv.Low, 0, 1), XHigh: scale(iv.High, 0, 1),
			BarW: scale(iv.Estimate, 0, 1) - labelWidth, Est: iv.Estimate, Low: iv.Low, High: iv.High})
	}
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		ch.Ticks = append(ch.Ticks, tick{X: scale(t, 0, 1), Label: fmt.Sprintf("%.0f%%", t*100)})
	}
	ch.AxisEnd = float64(24 + 44*len(sides) - 16)
	ch.Height = 24 + 44*len(sides)
	if c != nil {
		d := c.Difference
		span := math.Max(0.1, math.Ceil(math.Max(math.Abs(d.Low), math.Abs(d.High))*10)/10)
		y := float64(ch.Height + 30)
		row := &diffRow{Y: y, X: scale(d.Estimate, -span, span), XLow: scale(d.Low, -span, span),
			XHigh: scale(d.High, -span, span), XZero: scale(0, -span, span), ZeroTop: y - 14, ZeroBottom: y + 10,
			Class: verdictClass(c)}
		for _, t := range []float64{-span, -span / 2, 0, span / 2, span} {
			row.Ticks = append(row.Ticks, tick{X: scale(t, -span, span), Label: fmt.Sprintf("%+.2f", t)})
		}
		ch.Diff = row
		ch.Height = int(y) + 30
	}
	return ch
}

// matrixView is a side's confusion matrix: expected buckets down, what
// the agent did across, the shade of a cell its share of the row.
type matrixView struct {
	Side          string
	Width, Height int
	Cols          []matrixLabel
	Rows          []matrixRow
}

type matrixLabel struct {
	X, Y float64
	Text string
}

type matrixRow struct {
	Label matrixLabel
	Cells []matrixCell
}

type matrixCell struct {
	X, Y, Opacity float64
	TextX, TextY  float64 // where the count is written
	Row, Col      string
	Count         int
	Right         bool
}

const (
	cellW, cellH = 84, 30
	matrixLeft   = 96
	matrixTop    = 24
)

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
		m := matrixView{Side: s.Name, Width: matrixLeft + cellW*len(cols) + 4, Height: matrixTop + cellH*len(rows) + 4}
		for k, j := range cols {
			m.Cols = append(m.Cols, matrixLabel{X: float64(matrixLeft + cellW*k + cellW/2), Y: matrixTop - 8, Text: c.Cols[j]})
		}
		for k, i := range rows {
			total := 0
			for _, n := range c.Counts[i] {
				total += n
			}
			y := float64(matrixTop + cellH*k)
			row := matrixRow{Label: matrixLabel{X: matrixLeft - 8, Y: y + cellH/2 + 4, Text: c.Rows[i]}}
			for l, j := range cols {
				n := c.Counts[i][j]
				op := 0.0
				if n > 0 {
					op = 0.15 + 0.85*float64(n)/float64(max(1, total))
				}
				right := c.Rows[i] == c.Cols[j] || (c.Rows[i] == NoBucket && j >= len(brainwire.Buckets))
				x := float64(matrixLeft + cellW*l)
				row.Cells = append(row.Cells, matrixCell{X: x, Y: y, Opacity: op, TextX: x + cellW/2, TextY: y + cellH/2 + 4,
					Row: c.Rows[i], Col: c.Cols[j], Count: n, Right: right})
			}
			m.Rows = append(m.Rows, row)
		}
		out = append(out, m)
	}
	return out
}

// histogram shows how confident the filings (classified or low
// confidence) were, side by side, in bins of 0.05.
type histogram struct {
	Height, Base int
	// Top is the count the tallest bar stands for.
	Top        int
	Bins       []histBin
	Ticks      []tick
	XThreshold float64
	Series     []string
	Filed      []int // per side
}

type histBin struct {
	Low, High float64
	Bars      []histBar
}

type histBar struct {
	Side       string
	X, Y, W, H float64
	Count      int
}

// histBins is how many bins of confidence the histogram has.
const histBins = 20

// binOf is the bin of a confidence: [k/20, (k+1)/20), 1 in the last.
func binOf(conf float64) int {
	return min(histBins-1, max(0, int(math.Floor(conf*histBins+1e-9))))
}

func newHistogram(sides []sideView, results [][]Result) histogram {
	h := histogram{Height: 220, Base: 180}
	counts := make([][histBins]int, len(sides))
	top := 1
	for i, rs := range results {
		n := 0
		for _, r := range rs {
			if r.Outcome.Resolved() {
				counts[i][binOf(r.Conf)]++
				n++
			}
		}
		h.Filed = append(h.Filed, n)
		for _, c := range counts[i] {
			top = max(top, c)
		}
		h.Series = append(h.Series, sides[i].Name)
	}
	binW := float64(plotRight-labelWidth) / histBins
	barW := (binW - 4) / float64(len(sides))
	for k := range histBins {
		b := histBin{Low: float64(k) / histBins, High: float64(k+1) / histBins}
		for i := range sides {
			hgt := float64(counts[i][k]) / float64(top) * float64(h.Base-20)
			b.Bars = append(b.Bars, histBar{Side: sides[i].Name, X: labelWidth + float64(k)*binW + 2 + float64(i)*barW,
				Y: float64(h.Base) - hgt, W: barW, H: hgt, Count: counts[i][k]})
		}
		h.Bins = append(h.Bins, b)
	}
	for _, t := range []float64{0, 0.2, 0.4, 0.6, 0.8, 1} {
		h.Ticks = append(h.Ticks, tick{X: scale(t, 0, 1), Label: fmt.Sprintf("%.1f", t)})
	}
	h.XThreshold = scale(brainwire.ConfidenceThreshold, 0, 1)
	h.Top = top
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
