package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/brainwire/brainwire/eval"
)

// checkHTMLReport reads the HTML report's figures against the JSON
// report's, in the file as written and, in a subtest, in the page
// headless Chromium renders from it, whose screenshot must be a picture
// rather than a blank. Without Chromium the subtest skips, unless
// CI=true: then it fails.
func checkHTMLReport(t *testing.T, path string, rep *eval.Report) {
	t.Helper()
	checkPage(t, path, rep.Comparison.Verdict, func(where, page string) { checkPageFigures(t, where, page, rep) })
}

// checkPage reads a report page's figures (check), in the file as written
// and, in a subtest, in the page headless Chromium renders from it, whose
// screenshot must show verdict's banner. Without Chromium the subtest
// skips, unless CI=true: then it fails.
func checkPage(t *testing.T, path string, verdict eval.Verdict, check func(where, page string)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check("the file", string(raw))
	t.Run("chromium", func(t *testing.T) {
		bin, err := exec.LookPath("chromium")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("chromium is not installed (apt-get install chromium): the HTML report cannot be rendered")
			}
			t.Skip("chromium is not installed (apt-get install chromium)")
		}
		check("the rendered page", runChromium(t, bin, path, "--dump-dom"))
		shot := t.TempDir() + "/page.png"
		runChromium(t, bin, path, "--screenshot="+shot, "--window-size=1200,1600")
		checkScreenshot(t, shot, verdict)
	})
}

// runChromium renders the page headless, as root may, with nothing that
// reaches the network, and returns what it wrote on standard output. A
// browser that dies of a signal is started again, twice at most: on busy
// CI machines Chromium's headless screenshot now and then crashes on its
// own, which says nothing about the page. Any other failure is the test's.
func runChromium(t *testing.T, bin, page string, args ...string) string {
	t.Helper()
	const attempts = 3
	for attempt := 1; ; attempt++ {
		out, errText, err := chromiumOnce(t, bin, page, args)
		if err == nil {
			return out
		}
		var exit *exec.ExitError
		crashed := errors.As(err, &exit) && exit.ExitCode() == -1 && t.Context().Err() == nil
		if !crashed || attempt == attempts {
			t.Fatalf("chromium %v: %v\n%s", args, err, errText)
		}
		t.Logf("chromium %v crashed (%v), starting it again", args, err)
	}
}

// chromiumOnce runs Chromium once, in a profile of its own.
func chromiumOnce(t *testing.T, bin, page string, args []string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Shared memory goes to /tmp: Debian's launcher decides that from
	// findmnt, whose answer it cannot read when /dev/shm is mounted twice.
	cmd := exec.CommandContext(ctx, bin, append(append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}, args...), "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// figure is an element that carries a figure: its data-* attributes and
// its text.
type figure struct {
	attrs map[string]string
	text  string
}

// figures collects the page's elements that have data-metric, by metric,
// and the rows of cases (data-case) and trace links (data-run-id).
func figures(t *testing.T, page string) (byMetric map[string][]figure, cases map[string]string, links map[string]string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	byMetric, cases, links = map[string][]figure{}, map[string]string{}, map[string]string{}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		f := figure{attrs: map[string]string{}}
		for _, a := range n.Attr {
			f.attrs[a.Key] = a.Val
		}
		var text strings.Builder
		for d := range n.Descendants() {
			if d.Type == html.TextNode {
				text.WriteString(d.Data)
			}
		}
		f.text = strings.TrimSpace(text.String())
		if m, ok := f.attrs["data-metric"]; ok {
			byMetric[m] = append(byMetric[m], f)
		}
		if id, ok := f.attrs["data-case"]; ok {
			cases[id] = f.attrs["data-kind"]
		}
		if id, ok := f.attrs["data-run-id"]; ok && n.Data == "a" {
			links[id] = f.attrs["href"]
		}
	}
	return byMetric, cases, links
}

// checkPageFigures checks every figure the page marks against the JSON
// report, or against what its runs say.
func checkPageFigures(t *testing.T, where, page string, rep *eval.Report) {
	t.Helper()
	byMetric, cases, links := figures(t, page)
	one := func(metric string) figure {
		t.Helper()
		fs := byMetric[metric]
		if len(fs) != 1 {
			t.Fatalf("%s: %d elements with data-metric %q, want 1", where, len(fs), metric)
		}
		return fs[0]
	}
	value := func(f figure) float64 {
		t.Helper()
		v, err := strconv.ParseFloat(f.attrs["data-value"], 64)
		if err != nil {
			t.Fatalf("%s: data-value %q: %v", where, f.attrs["data-value"], err)
		}
		return v
	}
	c := rep.Comparison
	for metric, want := range map[string]struct {
		v    float64
		text string
	}{
		"cases":                   {float64(rep.Cases), fmt.Sprint(rep.Cases)},
		"trials":                  {float64(rep.Trials), fmt.Sprint(rep.Trials)},
		"candidate-accuracy":      {rep.Candidate.AccuracyInterval.Estimate, fmt.Sprintf("%.3f", rep.Candidate.AccuracyInterval.Estimate)},
		"candidate-accuracy-low":  {rep.Candidate.AccuracyInterval.Low, fmt.Sprintf("%.3f", rep.Candidate.AccuracyInterval.Low)},
		"candidate-accuracy-high": {rep.Candidate.AccuracyInterval.High, fmt.Sprintf("%.3f", rep.Candidate.AccuracyInterval.High)},
		"baseline-accuracy":       {rep.Baseline.AccuracyInterval.Estimate, fmt.Sprintf("%.3f", rep.Baseline.AccuracyInterval.Estimate)},
		"baseline-accuracy-low":   {rep.Baseline.AccuracyInterval.Low, fmt.Sprintf("%.3f", rep.Baseline.AccuracyInterval.Low)},
		"baseline-accuracy-high":  {rep.Baseline.AccuracyInterval.High, fmt.Sprintf("%.3f", rep.Baseline.AccuracyInterval.High)},
		"difference":              {c.Difference.Estimate, fmt.Sprintf("%+.3f", c.Difference.Estimate)},
		"difference-low":          {c.Difference.Low, fmt.Sprintf("%+.3f", c.Difference.Low)},
		"difference-high":         {c.Difference.High, fmt.Sprintf("%+.3f", c.Difference.High)},
		"cases-better":            {float64(c.CasesBetter), fmt.Sprint(c.CasesBetter)},
		"cases-worse":             {float64(c.CasesWorse), fmt.Sprint(c.CasesWorse)},
		"p-value":                 {c.PValue, ""},
		"baseline-filed":          {float64(resolvedRuns(rep.BaselineResults)), fmt.Sprint(resolvedRuns(rep.BaselineResults))},
		"candidate-filed":         {float64(resolvedRuns(rep.Results)), fmt.Sprint(resolvedRuns(rep.Results))},
	} {
		f := one(metric)
		if got := value(f); got != want.v || (want.text != "" && f.text != want.text) {
			t.Errorf("%s: %s is %v, shown %q; the JSON report's is %v (%q)", where, metric, got, f.text, want.v, want.text)
		}
	}
	if v := one("verdict").attrs["data-value"]; v != string(c.Verdict) {
		t.Errorf("%s: verdict %q, the JSON report's %q", where, v, c.Verdict)
	}
	for _, side := range []struct {
		name    string
		p       eval.PassReport
		results []eval.Result
	}{{"baseline", *rep.Baseline, rep.BaselineResults}, {"candidate", rep.Candidate, rep.Results}} {
		cm := side.p.Metrics.Confusion
		total := 0
		for _, f := range byMetric[side.name+"-confusion"] {
			i, j := slices.Index(cm.Rows, f.attrs["data-row"]), slices.Index(cm.Cols, f.attrs["data-col"])
			if i < 0 || j < 0 || value(f) != float64(cm.Counts[i][j]) || f.text != fmt.Sprint(cm.Counts[i][j]) {
				t.Errorf("%s: %s confusion %s/%s is %s, the JSON report's %v", where, side.name, f.attrs["data-row"], f.attrs["data-col"], f.text, cm.Counts)
			}
			total += int(value(f))
		}
		if total != rep.Cases*rep.Trials {
			t.Errorf("%s: the %s confusion matrix counts %d runs, want %d", where, side.name, total, rep.Cases*rep.Trials)
		}
		// The histogram, from the runs.
		bins := map[string]int{}
		for _, r := range side.results {
			if r.Outcome.Resolved() {
				bins[fmt.Sprintf("%.2f", float64(min(19, int(r.Conf*20+1e-9)))/20)]++
			}
		}
		shown := byMetric[side.name+"-confidence-bin"]
		if len(shown) != 20 {
			t.Errorf("%s: %d %s bins, want 20", where, len(shown), side.name)
		}
		for _, f := range shown {
			if got := int(value(f)); got != bins[f.attrs["data-bin"]] {
				t.Errorf("%s: %s bin %s holds %d, the runs %d", where, side.name, f.attrs["data-bin"], got, bins[f.attrs["data-bin"]])
			}
		}
	}
	// The changed cases, listed as such; every run of every case linked
	// to its trace.
	want := map[string]string{}
	for _, ch := range rep.Changes {
		want[ch.Case.ID] = string(ch.Kind)
	}
	if fmt.Sprint(cases) != fmt.Sprint(want) {
		t.Errorf("%s: cases %v; the JSON report's changes %v", where, cases, want)
	}
	all := append(slices.Clone(rep.BaselineResults), rep.Results...)
	for _, r := range all {
		if links[r.RunID] != r.TraceURL || r.TraceURL == "" {
			t.Errorf("%s: run %s links to %q, want %q", where, r.RunID, links[r.RunID], r.TraceURL)
		}
	}
	if len(links) != len(all) {
		t.Errorf("%s: %d runs linked, the JSON report has %d", where, len(links), len(all))
	}
}

func resolvedRuns(results []eval.Result) int {
	n := 0
	for _, r := range results {
		if r.Outcome.Resolved() {
			n++
		}
	}
	return n
}

// checkScreenshot checks that the page rendered as a picture: much of it
// is not the white background, it has many colours, and the verdict's
// banner and both sides' bars are on it.
func checkScreenshot(t *testing.T, path string, verdict eval.Verdict) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	ink := 0
	colours := map[[3]uint32]bool{}
	near := map[string]int{}
	accents := map[string][3]uint32{ // the page's CSS colours
		"baseline bars": {0x7f, 0x97, 0xb2}, "candidate bars": {0xe6, 0x7e, 0x22}, "better banner": {0x1e, 0x84, 0x49},
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := [3]uint32{r >> 8, g >> 8, bl >> 8}
			if c[0] < 245 || c[1] < 245 || c[2] < 245 {
				ink++
			}
			colours[[3]uint32{c[0] >> 4, c[1] >> 4, c[2] >> 4}] = true
			for name, a := range accents {
				if absDiff(c[0], a[0])+absDiff(c[1], a[1])+absDiff(c[2], a[2]) < 24 {
					near[name]++
				}
			}
		}
	}
	total := b.Dx() * b.Dy()
	if share := float64(ink) / float64(total); share < 0.08 || len(colours) < 30 {
		t.Errorf("screenshot %dx%d: %.1f%% of it not background, %d colours: want a picture", b.Dx(), b.Dy(), 100*share, len(colours))
	}
	for name := range accents {
		if name == "better banner" && verdict != eval.Better {
			continue
		}
		if near[name] < 2000 {
			t.Errorf("screenshot: %d pixels of the %s", near[name], name)
		}
	}
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}
