package eval_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/eval"
)

// TestHTMLIsSelfContained checks that the HTML report needs nothing from
// the network (no script, stylesheet, font or image to fetch; its only
// links are the runs' traces), escapes what the corpus says, and renders
// without a baseline too. cmd/brainwire's tests render it in a browser.
func TestHTMLIsSelfContained(t *testing.T) {
	base := synth(4, 2, func(c, _ int) bool { return c > 1 }, sure, jitter)
	cand := synth(4, 2, func(c, _ int) bool { return c > 0 }, sure, jitter)
	for i := range cand {
		cand[i].Case.Text = `<script>alert("x")</script> & "quotes"`
		cand[i].TraceID = fmt.Sprintf("%032x", i+1)
		cand[i].Reasoning = "Keyword check </div><b>bold</b>"
	}
	rep := eval.NewReport(eval.ReportConfig{RunID: "eval-t", Corpus: "c.jsonl", TraceURL: "http://jaeger.test/trace/{trace_id}"},
		&eval.Pass{Instructions: "new.txt", Results: cand}, &eval.Pass{Instructions: "agent", Results: base})
	alone := eval.NewReport(eval.ReportConfig{RunID: "eval-t", Corpus: "c.jsonl", MinAccuracy: 0.9},
		&eval.Pass{Instructions: "agent", Results: base}, nil)
	for name, r := range map[string]*eval.Report{"with a baseline": rep, "alone": alone} {
		var b bytes.Buffer
		if err := r.Write(&b, eval.FormatHTML); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		for _, banned := range []string{"<script", "<link", "@import", "url(", " src=", "<img", "<iframe"} {
			if strings.Contains(strings.ToLower(page), banned) {
				t.Errorf("%s: the page has %q", name, banned)
			}
		}
		for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(page, -1) {
			if !strings.HasPrefix(m[1], "http://jaeger.test/trace/") {
				t.Errorf("%s: a link that is not a trace: %s", name, m[1])
			}
		}
		if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, "</html>") {
			t.Errorf("%s: not a whole page", name)
		}
	}
	var b bytes.Buffer
	if err := rep.Write(&b, eval.FormatHTML); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#34;quotes&#34;", "Keyword check &lt;/div&gt;&lt;b&gt;bold&lt;/b&gt;",
		`data-metric="verdict" data-value="not distinguishable"`, `href="http://jaeger.test/trace/00000000000000000000000000000003"`,
		`data-case="c01" data-kind="fixed"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	b.Reset()
	if err := alone.Write(&b, eval.FormatHTML); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Wrong cases (2)") || !strings.Contains(b.String(), "FAILED: accuracy is below -min-accuracy 0.900") {
		t.Errorf("without a baseline the page lists no wrong cases:\n%s", b.String())
	}
}
