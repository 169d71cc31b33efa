package shadowreport

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/internal/textcut"
)

// Promote says how to make a candidate production, and NextCandidate how
// to try another.
const (
	Promote       = "set BRAINWIRE_INSTRUCTIONS to the candidate's file and restart serve"
	NextCandidate = "point BRAINWIRE_SHADOW_INSTRUCTIONS at the next candidate's file and restart serve"
)

// excerptBytes bounds the text and reasoning the text report shows of a
// capture; JSON and HTML show what the trial kept.
const excerptBytes = 160

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "shadow trials: %s (labels: the person's recategorize%s)\n", counted(len(r.Candidates), "candidate version"), confirmText(r.ConfirmAfter))
	for _, c := range r.Candidates {
		fmt.Fprintf(&b, "\ncandidate %s", c.Version)
		if c.InstructionsHash != "" || c.Model != "" {
			fmt.Fprintf(&b, " (instructions hash %s, model %s)", orDash(c.InstructionsHash), orDash(c.Model))
		}
		fmt.Fprintf(&b, " against production %s\n", strings.Join(c.Production, ", "))
		fmt.Fprintf(&b, "  pairs          %d\n", c.Pairs)
		fmt.Fprintf(&b, "  agreement      %d of %d (%.3f)\n", c.Agreed, c.Pairs, c.Agreement)
		fmt.Fprintf(&b, "  labelled       %d (%d recategorized, %d confirmed after %s)\n", c.Labelled, c.Recategorized, c.ConfirmedAfter, r.ConfirmAfter)
		if c.Labelled == 0 {
			b.WriteString("  accuracy       no labelled captures yet\n")
		} else {
			for _, a := range []struct {
				name    string
				correct int
				iv      eval.Interval
			}{{"production", c.ProductionCorrect, c.ProductionAccuracy}, {"candidate ", c.CandidateCorrect, c.CandidateAccuracy}} {
				fmt.Fprintf(&b, "  accuracy       %s %.3f (%d of %d; 95%% Wilson %.3f to %.3f)\n", a.name, a.iv.Estimate, a.correct, c.Labelled, a.iv.Low, a.iv.High)
			}
		}
		fmt.Fprintf(&b, "  verdict        %s: %d right with the candidate only, %d with production only; %s p %s\n",
			verdictText(c.Verdict), c.CandidateOnly, c.ProductionOnly, c.Test, pText(c.PValue))
		fmt.Fprintf(&b, "  promote        version %s: %s\n", c.Version, Promote)
		fmt.Fprintf(&b, "  next           %s\n", NextCandidate)
		fmt.Fprintf(&b, "  disagreements  %d\n", len(c.Disagreements))
		for _, d := range c.Disagreements {
			fmt.Fprintf(&b, "    %s [%s] %q\n", d.ItemID, kindText(d), textcut.Ellipsis(oneLine(d.Text), excerptBytes))
			for _, a := range []struct {
				name string
				arm  Arm
			}{{"production", d.Production}, {"candidate ", d.Candidate}} {
				fmt.Fprintf(&b, "      %s %s  trace %s\n", a.name, answerText(a.arm), orDash(cmp.Or(a.arm.TraceURL, a.arm.TraceID)))
				if a.arm.Reasoning != "" {
					fmt.Fprintf(&b, "                 %s\n", textcut.Ellipsis(oneLine(a.arm.Reasoning), excerptBytes))
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

//go:embed report.html
var reportHTML string

var htmlTemplate = template.Must(template.New("shadow").Funcs(template.FuncMap{
	"css":       eval.Stylesheet,
	"num":       func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) },
	"pct":       func(x float64) string { return strconv.FormatFloat(100*x, 'f', 2, 64) + "%" },
	"f3":        func(x float64) string { return fmt.Sprintf("%.3f", x) },
	"pvalue":    pText,
	"arms":      arms,
	"class":     verdictClass,
	"kind":      kindText,
	"answer":    answerText,
	"promote":   func() string { return Promote },
	"next":      func() string { return NextCandidate },
	"reasoning": reasoningHTML,
}).Parse(reportHTML))

// reasoningHTML is an excerpt as the page shows it: the **title** markup
// reasoning summaries open each part with in bold, the rest as text.
func reasoningHTML(s string) template.HTML {
	var b strings.Builder
	parts := strings.Split(s, "**")
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1:
			b.WriteString("<strong>" + template.HTMLEscapeString(p) + "</strong>")
		case i%2 == 1: // a ** never closed
			b.WriteString("**" + template.HTMLEscapeString(p))
		default:
			b.WriteString(template.HTMLEscapeString(p))
		}
	}
	return template.HTML(b.String())
}

// WriteHTML writes the report as one self-contained page in the style of
// eval's.
func (r *Report) WriteHTML(w io.Writer) error {
	if err := htmlTemplate.Execute(w, r); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	return nil
}

// armView is one arm's bar on the page: production in the colour eval
// gives its baseline.
type armView struct {
	Name, Class string
	Interval    eval.Interval
	Correct     int
}

func arms(c Candidate) []armView {
	return []armView{{"production", "baseline", c.ProductionAccuracy, c.ProductionCorrect},
		{"candidate", "candidate", c.CandidateAccuracy, c.CandidateCorrect}}
}

func verdictText(v eval.Verdict) string {
	switch v {
	case eval.Better:
		return "the candidate is better"
	case eval.Worse:
		return "the candidate is worse"
	}
	return "not distinguishable"
}

// verdictClass is the class that colours a verdict in eval's stylesheet.
func verdictClass(v eval.Verdict) string {
	if v == eval.NotDistinguishable {
		return "even"
	}
	return string(v)
}

// kindText says which arm a disagreement's label proves right.
func kindText(d Disagreement) string {
	p, c := d.Production.Correct, d.Candidate.Correct
	switch {
	case p == nil:
		return "unlabelled"
	case *c && !*p:
		return "fixed"
	case *p && !*c:
		return "broken"
	}
	return "both wrong"
}

func answerText(a Arm) string {
	s := string(a.Outcome)
	if a.Bucket != "" {
		s += " " + a.Bucket
	}
	s += fmt.Sprintf(" %.2f", a.Confidence)
	if a.Correct != nil {
		if *a.Correct {
			s += " ✓"
		} else {
			s += " ✗"
		}
	}
	return s
}

func confirmText(d string) string {
	if d == "0s" {
		return " only"
	}
	return ", or the agent's filing left alone for " + d
}

func pText(p float64) string {
	if p < 0.0001 {
		return "< 0.0001"
	}
	return fmt.Sprintf("%.4f", p)
}

func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orDash(s string) string { return cmp.Or(s, "-") }
