package eval

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/brainwire/brainwire/internal/textcut"
)

// Formats a report renders in.
const (
	FormatTable    = "table"
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
	FormatHTML     = "html"
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
	case FormatHTML:
		return r.writeHTML(w)
	}
	return fmt.Errorf("unknown format %q (table, markdown, json, html)", format)
}

// table is one section's rows, rendered aligned for a terminal or as a
// Markdown table.
type table struct {
	title  string
	header []string
	rows   [][]string
	// after, if set, gives the notes that follow the table (bold marks
	// what matters).
	after func(bold func(string) string) []string
}

func (r *Report) render(w io.Writer, markdown bool) error {
	var b strings.Builder
	trials := ""
	if r.Trials > 1 {
		trials = fmt.Sprintf(", each run %d times a side", r.Trials)
	}
	if markdown {
		fmt.Fprintf(&b, "# brainwire eval `%s`\n\n%s from `%s`%s.\n\n", r.RunID, count(r.Cases, "case"), r.Corpus, trials)
	} else {
		fmt.Fprintf(&b, "brainwire eval %s: %s from %s%s\n\n", r.RunID, count(r.Cases, "case"), r.Corpus, trials)
	}
	bold := func(s string) string {
		if markdown {
			return "**" + s + "**"
		}
		return s
	}
	for _, t := range r.tables() {
		if markdown {
			t.markdown(&b)
		} else {
			t.text(&b)
		}
		if t.after == nil {
			continue
		}
		if notes := t.after(bold); len(notes) > 0 {
			sep := "\n"
			if markdown {
				sep = "\n\n" // a paragraph each
			}
			b.WriteString(strings.Join(notes, sep) + "\n\n")
		}
	}
	verdict := ""
	switch {
	case r.MinAccuracy > 0 && r.Passed:
		verdict = fmt.Sprintf("accuracy %.3f reaches -min-accuracy %.3f", r.Candidate.Metrics.Accuracy, r.MinAccuracy)
	case r.MinAccuracy > 0:
		verdict = fmt.Sprintf("FAILED: accuracy %.3f is below -min-accuracy %.3f", r.Candidate.Metrics.Accuracy, r.MinAccuracy)
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
	sides := sidesOf(r)
	header := []string{""}
	for _, s := range sides {
		header = append(header, s.Name)
	}
	if r.Baseline != nil {
		header = append(header, "change")
	}
	// row makes a row of one value per pass, and the change when there is
	// a baseline.
	row := func(label string, value func(PassReport) string, delta func(PassReport) float64, deltaFmt string) []string {
		out := []string{label}
		for _, s := range sides {
			out = append(out, value(s.P))
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
	interval := row("accuracy 95% interval", func(p PassReport) string { return span(p.AccuracyInterval, "%.3f") }, none, "")
	if c := r.Comparison; c != nil {
		interval[len(interval)-1] = span(c.Difference, "%+.3f")
	}
	summary.rows = append(summary.rows, interval)
	if r.Trials > 1 {
		summary.rows = append(summary.rows, row("cases whose trials agreed", func(p PassReport) string {
			return fmt.Sprintf("%d/%d", p.CasesAgreed, r.Cases)
		}, none, ""))
	}
	for i, o := range r.Candidate.Metrics.Outcomes {
		summary.rows = append(summary.rows, row(string(o.Outcome)+" rate", func(p PassReport) string {
			x := p.Metrics.Outcomes[i]
			return fmt.Sprintf("%.3f (%d)", x.Rate, x.Count)
		}, func(p PassReport) float64 { return p.Metrics.Outcomes[i].Rate }, "%+.3f"))
	}
	tto := row("time to outcome ms (p50, p95)", func(p PassReport) string {
		return fmt.Sprintf("%.0f, %.0f", p.Metrics.TimeToOutcomeMS.P50, p.Metrics.TimeToOutcomeMS.P95)
	}, func(p PassReport) float64 { return p.Metrics.TimeToOutcomeMS.P50 }, "%+.0f")
	if t := r.Timing; t != nil && !t.Real {
		tto[len(tto)-1] = "no real change"
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
		tto,
	)
	summary.after = r.summaryNotes

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
	cases, title := newCaseViews(r)
	if r.Baseline == nil {
		wrong := table{title: "Wrong cases", header: []string{"case", "text", "expected", "got", "run_id", "trace"}}
		for _, c := range cases {
			a := c.Answers[0].Answer
			first := a.Runs[slices.IndexFunc(a.Runs, func(t Trial) bool { return !t.Correct })]
			wrong.rows = append(wrong.rows, []string{c.Case.ID, textcut.Ellipsis(oneLine(c.Case.Text), 48),
				expectedText(c.Case), answerText(a), first.RunID, traceText(first)})
		}
		if len(wrong.rows) > 0 {
			out = append(out, wrong)
		}
		return out
	}
	changes := table{title: title, header: []string{"", "case", "text", "expected", "baseline", "candidate"}}
	runs := table{title: "Runs of the changed cases", header: []string{"case", "side", "trial", "answer", "run_id", "trace"}}
	for _, c := range cases {
		changes.rows = append(changes.rows, []string{c.Kind, c.Case.ID, textcut.Ellipsis(oneLine(c.Case.Text), 48),
			expectedText(c.Case), answerText(c.Answers[0].Answer), answerText(c.Answers[1].Answer)})
		for _, side := range c.Answers {
			for _, t := range side.Answer.Runs {
				runs.rows = append(runs.rows, []string{c.Case.ID, side.Side, fmt.Sprint(t.N), trialText(t), t.RunID, traceText(t)})
			}
		}
	}
	if len(changes.rows) == 0 {
		changes.rows = [][]string{{"", "", "no case changed", "", "", ""}}
	} else {
		changes.after = func(func(string) string) []string { return []string{r.changeLegend()} }
	}
	out = append(out, changes)
	if len(runs.rows) > 0 {
		runs.after = r.traceNote
		out = append(out, runs)
	}
	if t := r.Timing; t != nil && len(t.Cases) > 0 {
		timing := table{title: "Cases whose time to outcome changed (" + t.CaseTest + ", q < 0.05)",
			header: []string{"case", "baseline p50 ms", "candidate p50 ms", "p", "q"}}
		for _, c := range t.Cases {
			timing.rows = append(timing.rows, []string{c.Case, fmt.Sprintf("%.1f", c.BaselineMS), fmt.Sprintf("%.1f", c.CandidateMS),
				pText(c.PValue), pText(c.QValue)})
		}
		out = append(out, timing)
	}
	return out
}

// summaryNotes says what the comparison concludes, whether the trials
// varied, and what the timing test found.
func (r *Report) summaryNotes(bold func(string) string) []string {
	var notes []string
	if c := r.Comparison; c != nil {
		verdict := "the candidate is not distinguishable from the baseline"
		if c.Verdict != NotDistinguishable {
			verdict = "the candidate is " + string(c.Verdict) + " than the baseline"
		}
		notes = append(notes, fmt.Sprintf("%s: accuracy %s, 95%% interval %s (%s); %s better and %d worse; %s, p %s.",
			bold("Verdict: "+verdict), signedText("%+.3f", c.Difference.Estimate), span(c.Difference, "%+.3f"), c.Difference.Method,
			count(c.CasesBetter, "case"), c.CasesWorse, c.Test, pRelation(c.PValue)))
	}
	if r.Trials > 1 {
		sides := []PassReport{r.Candidate}
		if r.Baseline != nil {
			sides = append(sides, *r.Baseline)
		}
		all := true
		for _, p := range sides {
			all = all && p.CasesAgreed == r.Cases
		}
		if all {
			notes = append(notes, fmt.Sprintf("Every trial agreed: each case got the same answer on all %d runs, so the agent "+
				"did not vary here and more trials tell nothing new.", r.Trials))
		}
		counts := fmt.Sprintf("%.0f", r.Candidate.AccuracyInterval.EffectiveRuns)
		if b := r.Baseline; b != nil {
			counts = fmt.Sprintf("%.0f (baseline) and %.0f (candidate)", b.AccuracyInterval.EffectiveRuns, r.Candidate.AccuracyInterval.EffectiveRuns)
		}
		notes = append(notes, fmt.Sprintf("Accuracy intervals: %s: the %d runs of a side count as %s.",
			r.Candidate.AccuracyInterval.Method, r.Cases*r.Trials, counts))
	}
	if t := r.Timing; t != nil {
		what := fmt.Sprintf("median change %s ms a case, %s slower and %d faster; %s, p %s", signedText("%+.1f", t.MedianDifferenceMS),
			count(t.CasesSlower, "case"), t.CasesFaster, t.Test, pRelation(t.PValue))
		if t.Real {
			notes = append(notes, "Time to outcome changed for real: "+what+".")
		} else {
			notes = append(notes, "Time to outcome: no real change: "+what+".")
		}
		if r.Trials < minTimingTrials {
			notes = append(notes, fmt.Sprintf("Case by case, timing needs at least %d trials a side.", minTimingTrials))
		} else if len(t.Cases) == 0 {
			notes = append(notes, fmt.Sprintf("Case by case (%s over %s), no time changed for real.", t.CaseTest, count(t.CasesTested, "case")))
		}
	}
	return notes
}

// changeSummary counts the changed cases by kind, with the distinct texts
// they are when fewer.
func (r *Report) changeSummary() string {
	var parts []string
	for _, c := range r.ChangeCounts {
		s := fmt.Sprintf("%d %s", c.Cases, strings.ReplaceAll(string(c.Kind), "_", " "))
		if c.Texts < c.Cases {
			s += fmt.Sprintf(" (%s)", count(c.Texts, "distinct text"))
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// changeLegend says how the changed cases are ranked.
func (r *Report) changeLegend() string {
	s := fmt.Sprintf("Worst first: broken silently (was right, now filed wrong without asking), broken (was right, now wrong, "+
		"the person asked), stopped asking (wrong either way, now filed without asking), fewer right (fewer of its trials right), "+
		"confidence drop (right either way, confidence down %.2f or more in the same bucket); then, best first: fixed (now right), "+
		"now asked (wrong either way, now the person is asked), more right (more of its trials right); then changed (another answer, "+
		"as right or as wrong). A case is listed once, under the first that applies.", r.ConfidenceDrop)
	if r.Trials > 1 {
		s += " Every case whose right trials changed is listed: the cases the verdict counts better and worse."
	}
	return s
}

// traceNote says how to open the runs when they have no links.
func (r *Report) traceNote(func(string) string) []string {
	for _, res := range r.Results {
		if res.TraceID != "" {
			if r.TraceURL == "" {
				return []string{"Trace ids open in Jaeger, Grafana/Tempo or Application Insights; -trace-url makes them links."}
			}
			return nil
		}
	}
	return []string{"The runs were not traced: configure telemetry (as for serve) to get their trace ids."}
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
	return signedText(format, x)
}

// signedText writes x in format, a value that rounds to zero as zero: a
// sum of fractions left a few ulps below it is not "-0.000".
func signedText(format string, x float64) string {
	s := fmt.Sprintf(format, x)
	if strings.Trim(s, "+-0.") == "" {
		return fmt.Sprintf(format, 0.0)
	}
	return s
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
	if a.Trials > 1 {
		mark += fmt.Sprintf(" %d/%d", a.CorrectTrials, a.Trials)
	}
	if a.Outcome.Resolved() {
		return fmt.Sprintf("%s %s %s %.2f", mark, a.Bucket, a.Outcome, a.Confidence)
	}
	return fmt.Sprintf("%s %s", mark, a.Outcome)
}

func trialText(t Trial) string {
	return answerText(Answer{Outcome: t.Outcome, Bucket: t.Bucket, Confidence: t.Conf, Correct: t.Correct, Trials: 1})
}

// traceText is where a run's trace is: its link, its id, or "-".
func traceText(t Trial) string {
	return orDash(cmp.Or(t.TraceURL, t.TraceID))
}

// span writes an interval as "low to high".
func span(i Interval, format string) string {
	if math.IsNaN(i.Low) {
		return "-"
	}
	return signedText(format, i.Low) + " to " + signedText(format, i.High)
}

// pText writes a p-value to four decimals, small ones as "< 0.0001".
func pText(p float64) string {
	if p < 0.0001 {
		return "< 0.0001"
	}
	return fmt.Sprintf("%.4f", p)
}

// pRelation is "= 0.1250" or "< 0.0001", to follow "p".
func pRelation(p float64) string {
	if t := pText(p); strings.HasPrefix(t, "<") {
		return t
	}
	return "= " + pText(p)
}

// count writes n and a regular noun, singular or plural.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
