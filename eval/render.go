package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/brainwire/brainwire/internal/textcut"
)

// Formats a report renders in.
const (
	FormatTable    = "table"
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// Write renders the report in format.
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case FormatTable, "":
		return r.render(w, false)
	case FormatMarkdown:
		return r.render(w, true)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return fmt.Errorf("unknown format %q (table, markdown, json)", format)
}

// table is one section's rows, rendered aligned for a terminal or as a
// Markdown table.
type table struct {
	title  string
	header []string
	rows   [][]string
}

func (r *Report) render(w io.Writer, markdown bool) error {
	var b strings.Builder
	if markdown {
		fmt.Fprintf(&b, "# brainwire eval `%s`\n\n%d cases from `%s`.\n\n", r.RunID, r.Cases, r.Corpus)
	} else {
		fmt.Fprintf(&b, "brainwire eval %s: %d cases from %s\n\n", r.RunID, r.Cases, r.Corpus)
	}
	for _, t := range r.tables() {
		if markdown {
			t.markdown(&b)
		} else {
			t.text(&b)
		}
	}
	verdict := ""
	switch {
	case r.MinAccuracy > 0 && r.Passed:
		verdict = fmt.Sprintf("accuracy %.3f reaches --min-accuracy %.3f", r.Candidate.Metrics.Accuracy, r.MinAccuracy)
	case r.MinAccuracy > 0:
		verdict = fmt.Sprintf("FAILED: accuracy %.3f is below --min-accuracy %.3f", r.Candidate.Metrics.Accuracy, r.MinAccuracy)
	}
	if verdict != "" {
		if markdown {
			verdict = "**" + verdict + "**"
		}
		b.WriteString(verdict + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) tables() []table {
	passes := []PassReport{r.Candidate}
	names := []string{"candidate"}
	if r.Baseline != nil {
		passes = []PassReport{*r.Baseline, r.Candidate}
		names = []string{"baseline", "candidate", "change"}
	}
	header := append([]string{""}, names...)
	// row makes a row of one value per pass, and the change when there is
	// a baseline.
	row := func(label string, value func(PassReport) string, delta func(PassReport) float64, deltaFmt string) []string {
		out := []string{label}
		for _, p := range passes {
			out = append(out, value(p))
		}
		if r.Baseline != nil {
			out = append(out, signed(delta(r.Candidate)-delta(*r.Baseline), deltaFmt))
		}
		return out
	}
	none := func(PassReport) float64 { return math.NaN() }
	str := func(f func(PassReport) string) func(PassReport) string { return f }

	summary := table{title: "Summary", header: header}
	summary.rows = append(summary.rows,
		row("instructions", str(func(p PassReport) string { return p.Instructions }), none, ""),
		row("agent version", str(func(p PassReport) string { return orDash(p.AgentVersion) }), none, ""),
		row("model", str(func(p PassReport) string { return orDash(p.Model) }), none, ""),
		row("accuracy", func(p PassReport) string {
			return fmt.Sprintf("%.3f (%d/%d)", p.Metrics.Accuracy, p.Metrics.Correct, p.Metrics.Cases)
		}, func(p PassReport) float64 { return p.Metrics.Accuracy }, "%+.3f"),
	)
	for i, o := range r.Candidate.Metrics.Outcomes {
		summary.rows = append(summary.rows, row(string(o.Outcome)+" rate", func(p PassReport) string {
			x := p.Metrics.Outcomes[i]
			return fmt.Sprintf("%.3f (%d)", x.Rate, x.Count)
		}, func(p PassReport) float64 { return p.Metrics.Outcomes[i].Rate }, "%+.3f"))
	}
	summary.rows = append(summary.rows,
		row("reasoning bytes (mean, p95)", func(p PassReport) string {
			return fmt.Sprintf("%.0f, %.0f", p.Metrics.ReasoningBytes.Mean, p.Metrics.ReasoningBytes.P95)
		}, func(p PassReport) float64 { return p.Metrics.ReasoningBytes.Mean }, "%+.0f"),
		row("reasoning chunks (mean)", func(p PassReport) string {
			return fmt.Sprintf("%.1f", p.Metrics.ReasoningChunks.Mean)
		}, func(p PassReport) float64 { return p.Metrics.ReasoningChunks.Mean }, "%+.1f"),
		row("tokens in/out (mean)", func(p PassReport) string {
			return fmt.Sprintf("%.0f / %.0f", p.Metrics.InputTokens.Mean, p.Metrics.OutputTokens.Mean)
		}, func(p PassReport) float64 { return p.Metrics.InputTokens.Mean + p.Metrics.OutputTokens.Mean }, "%+.0f"),
		row("time to outcome ms (p50, p95)", func(p PassReport) string {
			return fmt.Sprintf("%.0f, %.0f", p.Metrics.TimeToOutcomeMS.P50, p.Metrics.TimeToOutcomeMS.P95)
		}, func(p PassReport) float64 { return p.Metrics.TimeToOutcomeMS.P50 }, "%+.0f"),
	)

	buckets := table{title: "Per bucket (precision, recall; filed / expected)", header: header}
	for i, bs := range r.Candidate.Metrics.Buckets {
		buckets.rows = append(buckets.rows, row(bs.Bucket, func(p PassReport) string {
			x := p.Metrics.Buckets[i]
			return fmt.Sprintf("%s, %s (%d/%d)", ratioText(x.Precision), ratioText(x.Recall), x.Filed, x.Expected)
		}, func(p PassReport) float64 { return float64(p.Metrics.Buckets[i].Recall) }, "%+.3f"))
	}

	cm := r.Candidate.Metrics.Confusion
	confusion := table{title: "Confusion (candidate): expected bucket by what was filed", header: append([]string{"expected \\ filed"}, cm.Cols...)}
	for i, rowName := range cm.Rows {
		cells := []string{rowName}
		total := 0
		for _, n := range cm.Counts[i] {
			cells = append(cells, fmt.Sprint(n))
			total += n
		}
		if total > 0 {
			confusion.rows = append(confusion.rows, cells)
		}
	}

	out := []table{summary, buckets, confusion}
	if r.Baseline != nil {
		changes := table{title: fmt.Sprintf("Changed cases (%d)", len(r.Changes)),
			header: []string{"", "case", "text", "expected", "baseline", "candidate"}}
		for _, c := range r.Changes {
			changes.rows = append(changes.rows, []string{string(c.Kind), c.Case.ID, textcut.Ellipsis(oneLine(c.Case.Text), 48),
				expectedText(c.Case), answerText(c.Baseline), answerText(c.Candidate)})
		}
		if len(changes.rows) == 0 {
			changes.rows = [][]string{{"", "", "no case changed", "", "", ""}}
		}
		out = append(out, changes)
	} else {
		wrong := table{title: "Wrong cases", header: []string{"case", "text", "expected", "got", "run_id"}}
		for _, res := range r.Results {
			if !res.Correct {
				wrong.rows = append(wrong.rows, []string{res.Case.ID, textcut.Ellipsis(oneLine(res.Case.Text), 48),
					expectedText(res.Case), answerText(answerOf(res)), res.RunID})
			}
		}
		if len(wrong.rows) > 0 {
			out = append(out, wrong)
		}
	}
	return out
}

func (t table) text(b *strings.Builder) {
	b.WriteString(t.title + "\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	line := func(cells []string) {
		fmt.Fprintln(tw, "  "+strings.Join(cells, "\t"))
	}
	line(t.header)
	for _, r := range t.rows {
		line(r)
	}
	tw.Flush()
	b.WriteString("\n")
}

func (t table) markdown(b *strings.Builder) {
	b.WriteString("## " + t.title + "\n\n")
	esc := func(cells []string) []string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		return out
	}
	b.WriteString("| " + strings.Join(esc(t.header), " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(t.header)) + "\n")
	for _, r := range t.rows {
		b.WriteString("| " + strings.Join(esc(r), " | ") + " |\n")
	}
	b.WriteString("\n")
}

func signed(x float64, format string) string {
	if math.IsNaN(x) || format == "" {
		return ""
	}
	if x == 0 {
		return "="
	}
	return fmt.Sprintf(format, x)
}

func ratioText(r Ratio) string {
	if math.IsNaN(float64(r)) {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(r))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func expectedText(c Case) string {
	switch {
	case c.ExpectedOutcome != "" && c.ExpectedBucket != "":
		return c.ExpectedBucket + " " + string(c.ExpectedOutcome)
	case c.ExpectedOutcome != "":
		return string(c.ExpectedOutcome)
	}
	return c.ExpectedBucket
}

func answerText(a Answer) string {
	mark := "✗"
	if a.Correct {
		mark = "✓"
	}
	if a.Outcome.Resolved() {
		return fmt.Sprintf("%s %s %s %.2f", mark, a.Bucket, a.Outcome, a.Confidence)
	}
	return fmt.Sprintf("%s %s", mark, a.Outcome)
}
