package shadowreport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/server"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// row is one capture of the example: what each arm made of it, and what
// the person did since (recategorize to label, or leave it alone for
// age).
type row struct {
	id, cand          string // the item; the candidate version tried on it
	pOut, pB          string // production's outcome and bucket
	pConf             float64
	cOut, cB          string
	cConf             float64
	recategorize      string        // the person's bucket, if they chose one
	age               time.Duration // since the item last changed
	noShadow, newText bool
}

const (
	cl = string(brainwire.OutcomeClassified)
	lo = string(brainwire.OutcomeLowConfidence)
	mu = string(brainwire.OutcomeMisunderstood)
)

// example is the trials the tests score. Candidate A (confirm-after 168h):
//
//	pairs 12 (i01–i11, i13); agreed 4 (i01, i02, i09, i13): 4/12
//	labelled 10: i01 left alone 10 days (People); i03–i10, i13 recategorized
//	production right: i01, i13 = 2/10; candidate right: i01, i03–i08, i13 = 8/10
//	discordant: candidate only 6 (i03–i08), production only 0: p = 2·2⁻⁶ = 1/32
//	disagreements 8: i03–i08, i10 (both wrong), i11 (unlabelled: 1 day alone)
//
// Candidate B: 2 pairs, 1 agreed, no labels, p = 1. i12 has no trial.
var example = []row{
	{id: "i01", cand: "A", pOut: cl, pB: "People", pConf: 0.90, cOut: cl, cB: "People", cConf: 0.88, age: 240 * time.Hour},
	{id: "i02", cand: "A", pOut: cl, pB: "Projects", pConf: 0.80, cOut: cl, cB: "Projects", cConf: 0.85, age: 48 * time.Hour},
	{id: "i03", cand: "A", pOut: cl, pB: "Projects", pConf: 0.81, cOut: cl, cB: "Ideas", cConf: 0.77, recategorize: "Ideas"},
	{id: "i04", cand: "A", pOut: lo, pB: "People", pConf: 0.50, cOut: cl, cB: "Admin", cConf: 0.70, recategorize: "Admin"},
	{id: "i05", cand: "A", pOut: mu, pB: "Ideas", pConf: 0.30, cOut: cl, cB: "Ideas", cConf: 0.65, recategorize: "Ideas"},
	{id: "i06", cand: "A", pOut: cl, pB: "Admin", pConf: 0.70, cOut: cl, cB: "People", cConf: 0.90, recategorize: "People"},
	{id: "i07", cand: "A", pOut: cl, pB: "Ideas", pConf: 0.62, cOut: cl, cB: "Projects", cConf: 0.80, recategorize: "Projects"},
	{id: "i08", cand: "A", pOut: cl, pB: "People", pConf: 0.75, cOut: cl, cB: "Admin", cConf: 0.66, recategorize: "Admin"},
	{id: "i09", cand: "A", pOut: cl, pB: "Ideas", pConf: 0.70, cOut: cl, cB: "Ideas", cConf: 0.60, recategorize: "Projects"},
	{id: "i10", cand: "A", pOut: cl, pB: "Admin", pConf: 0.70, cOut: cl, cB: "People", cConf: 0.70, recategorize: "Ideas"},
	{id: "i11", cand: "A", pOut: cl, pB: "People", pConf: 0.90, cOut: lo, cB: "Ideas", cConf: 0.55, age: 24 * time.Hour},
	{id: "i12", noShadow: true, pOut: cl, pB: "Admin", pConf: 0.9, recategorize: "Ideas"},
	// A low-confidence filing in the label's bucket is right, and agrees
	// with a classified one in the same bucket.
	{id: "i13", cand: "A", pOut: cl, pB: "Admin", pConf: 0.66, cOut: lo, cB: "Admin", cConf: 0.55, recategorize: "Admin"},
	{id: "i14", cand: "B", pOut: cl, pB: "Ideas", pConf: 0.80, cOut: cl, cB: "Ideas", cConf: 0.80, age: time.Hour},
	{id: "i15", cand: "B", pOut: cl, pB: "People", pConf: 0.80, cOut: cl, cB: "Projects", cConf: 0.70, age: time.Hour},
}

// items builds the example's inbox items, as a store keeps them.
func items(rows []row) []brainwire.InboxItem {
	var out []brainwire.InboxItem
	for n, r := range rows {
		created := now.Add(-300*time.Hour + time.Duration(n)*time.Hour)
		status := map[string]string{cl: brainwire.StatusClassified, lo: brainwire.StatusPending, mu: brainwire.StatusMisunderstood}[r.pOut]
		prod := brainwire.AgentRun{RunID: "run-" + r.id, AgentVersion: "sha256:prod00000000", Outcome: brainwire.Outcome(r.pOut),
			Bucket: r.pB, Confidence: r.pConf, TraceID: fmt.Sprintf("%032x", n+1), SpanID: fmt.Sprintf("%016x", n+1)}
		it := brainwire.InboxItem{ID: r.id, UserID: "alice", RawText: "capture " + r.id, Source: brainwire.KindText, Status: status,
			ClassificationMeta: &brainwire.Classification{Bucket: r.pB, Confidence: r.pConf, ClassifiedBy: "Classifier"},
			AgentRun:           &prod, CreatedAt: created, UpdatedAt: now.Add(-r.age)}
		if r.recategorize != "" {
			it.Status = brainwire.StatusClassified
			it.ClassificationMeta.Bucket, it.ClassificationMeta.ClassifiedBy = r.recategorize, server.ClassifiedByUser
		}
		if !r.noShadow {
			it.Shadow = &brainwire.ShadowTrial{
				Candidate: brainwire.AgentRun{RunID: "shadow-" + r.id, AgentVersion: "sha256:cand0000000" + strings.ToLower(r.cand),
					InstructionsHash: "c0ffee" + r.cand, Model: "gpt-4o", Outcome: brainwire.Outcome(r.cOut), Bucket: r.cB,
					Confidence: r.cConf, TraceID: fmt.Sprintf("%032x", 0x100+n+1), SpanID: fmt.Sprintf("%016x", 0x100+n+1)},
				Production:          prod,
				CandidateReasoning:  "The candidate read " + r.id + " as " + r.cB + ".",
				ProductionReasoning: "Production read " + r.id + " as " + r.pB + ".",
				At:                  created.Add(time.Second),
			}
		}
		out = append(out, it)
	}
	return out
}

// wilson is the Wilson score interval, written out from its definition.
func wilson(k, n float64) (float64, float64) {
	const z = 1.959963984540054
	p := k / n
	mid := (p + z*z/(2*n)) / (1 + z*z/n)
	half := z / (1 + z*z/n) * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	return mid - half, mid + half
}

func TestReportFiguresByHand(t *testing.T) {
	cfg := Config{ConfirmAfter: 168 * time.Hour, Now: now, TraceURL: "https://jaeger.example/trace/{trace_id}"}
	r := New(items(example), cfg)
	if len(r.Candidates) != 2 {
		t.Fatalf("%d candidates, want 2 (A, B)", len(r.Candidates))
	}
	b, a := r.Candidates[0], r.Candidates[1] // B was tried last
	if a.Version != "sha256:cand0000000a" || b.Version != "sha256:cand0000000b" {
		t.Fatalf("candidates %s, %s; want B (newest) then A", b.Version, a.Version)
	}
	lo2, hi2 := wilson(2, 10)
	lo8, hi8 := wilson(8, 10)
	// The same bounds, as published calculators give them.
	for _, c := range []struct{ got, want float64 }{{lo2, 0.0567}, {hi2, 0.5098}, {lo8, 0.4902}, {hi8, 0.9433}} {
		if math.Abs(c.got-c.want) > 5e-5 {
			t.Fatalf("the test's Wilson bound %v, want %v", c.got, c.want)
		}
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }
	for _, c := range []struct {
		name string
		ok   bool
		got  any
	}{
		{"A pairs 12, agreed 4", a.Pairs == 12 && a.Agreed == 4 && near(a.Agreement, 4.0/12), a},
		{"A labels 10 = 9 recategorized + 1 confirmed after", a.Labelled == 10 && a.Recategorized == 9 && a.ConfirmedAfter == 1, a},
		{"A production 2/10", a.ProductionCorrect == 2 && near(a.ProductionAccuracy.Estimate, 0.2) &&
			near(a.ProductionAccuracy.Low, lo2) && near(a.ProductionAccuracy.High, hi2), a.ProductionAccuracy},
		{"A candidate 8/10", a.CandidateCorrect == 8 && near(a.CandidateAccuracy.Estimate, 0.8) &&
			near(a.CandidateAccuracy.Low, lo8) && near(a.CandidateAccuracy.High, hi8), a.CandidateAccuracy},
		{"A discordant 6 vs 0, p 1/32, better", a.CandidateOnly == 6 && a.ProductionOnly == 0 && near(a.PValue, 1.0/32) &&
			a.Verdict == eval.Better, a},
		{"A production versions", len(a.Production) == 1 && a.Production[0] == "sha256:prod00000000", a.Production},
		{"B pairs 2, agreed 1, no labels, p 1", b.Pairs == 2 && b.Agreed == 1 && b.Labelled == 0 && b.PValue == 1 &&
			b.Verdict == eval.NotDistinguishable && b.CandidateAccuracy.Low == 0 && b.CandidateAccuracy.High == 1, b},
	} {
		if !c.ok {
			t.Errorf("%s: got %+v", c.name, c.got)
		}
	}
	// The disagreements, newest first, each with both arms, their
	// excerpts and trace links, and the label where there is one.
	want := []struct{ id, label, kind string }{
		{"i11", "", "unlabelled"}, {"i10", "Ideas", "both wrong"}, {"i08", "Admin", "fixed"}, {"i07", "Projects", "fixed"},
		{"i06", "People", "fixed"}, {"i05", "Ideas", "fixed"}, {"i04", "Admin", "fixed"}, {"i03", "Ideas", "fixed"},
	}
	if len(a.Disagreements) != len(want) {
		t.Fatalf("%d disagreements, want %d", len(a.Disagreements), len(want))
	}
	for i, d := range a.Disagreements {
		w := want[i]
		if d.ItemID != w.id || d.Label != w.label || kindText(d) != w.kind {
			t.Errorf("disagreement %d: %s label %q %s, want %s %q %s", i, d.ItemID, d.Label, kindText(d), w.id, w.label, w.kind)
		}
		for _, arm := range []Arm{d.Production, d.Candidate} {
			if arm.Reasoning == "" || arm.TraceURL != "https://jaeger.example/trace/"+arm.TraceID || arm.TraceID == "" {
				t.Errorf("%s: arm %+v lacks its excerpt or trace link", d.ItemID, arm)
			}
		}
	}
}

// TestLabels: which items are labelled, and by what.
func TestLabels(t *testing.T) {
	its := items(example)
	for _, c := range []struct {
		after    time.Duration
		id       string
		bucket   string
		kind     string
		labelled bool
	}{
		{168 * time.Hour, "i01", "People", ConfirmedAfter, true}, // 240h alone
		{168 * time.Hour, "i02", "", "", false},                  // 48h alone
		{0, "i01", "", "", false},                                // recategorizes only
		{0, "i03", "Ideas", Recategorized, true},
		{time.Hour, "i14", "Ideas", ConfirmedAfter, true}, // exactly the bound
		{time.Hour, "i04", "Admin", Recategorized, true},
	} {
		var it brainwire.InboxItem
		for _, x := range its {
			if x.ID == c.id {
				it = x
			}
		}
		b, k, ok := Label(it, Config{ConfirmAfter: c.after, Now: now})
		if b != c.bucket || k != c.kind || ok != c.labelled {
			t.Errorf("%s after %v: %q %q %v, want %q %q %v", c.id, c.after, b, k, ok, c.bucket, c.kind, c.labelled)
		}
	}
	// A pending filing left alone is not confirmed: the person was asked.
	pending := items([]row{{id: "p", cand: "A", pOut: lo, pB: "People", pConf: 0.5, cOut: cl, cB: "People", cConf: 0.8, age: 1000 * time.Hour}})[0]
	if _, _, ok := Label(pending, Config{ConfirmAfter: time.Hour, Now: now}); ok {
		t.Error("a low-confidence filing left alone counts as confirmed")
	}
	// Nor is a filing replaced by a later run (a follow-up's).
	refiled := its[0]
	refiled.AgentRun = &brainwire.AgentRun{RunID: "run-follow-up", Outcome: brainwire.OutcomeClassified, Bucket: "People"}
	if _, _, ok := Label(refiled, Config{ConfirmAfter: time.Hour, Now: now}); ok {
		t.Error("a filing by another run than the trial's counts as confirmed")
	}
}

// pagedInbox serves items two to a page.
type pagedInbox []brainwire.InboxItem

func (p pagedInbox) ListInbox(_ context.Context, user string, opts brainwire.ListOptions) (brainwire.InboxPage, error) {
	start := 0
	fmt.Sscan(opts.Cursor, &start)
	var page brainwire.InboxPage
	for i := start; i < len(p) && i < start+2; i++ {
		if p[i].UserID == user {
			page.Items = append(page.Items, p[i])
		}
	}
	if start+2 < len(p) {
		page.NextCursor = fmt.Sprint(start + 2)
	}
	return page, nil
}

func TestReadKeepsShadowedItemsOfEveryPage(t *testing.T) {
	got, err := Read(t.Context(), pagedInbox(items(example)), []string{"alice", "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(example)-1 {
		t.Errorf("read %d items, want %d (all but the one without a trial)", len(got), len(example)-1)
	}
}

// TestRenderings: the JSON holds the report whole, and the text says the
// figures a person acts on.
func TestRenderings(t *testing.T) {
	r := New(items(example), Config{ConfirmAfter: 168 * time.Hour, Now: now, TraceURL: "https://jaeger.example/trace/{trace_id}"})
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	first, _ := json.Marshal(r)
	if !bytes.Equal(again, first) || len(back.Candidates[1].Disagreements) != 8 || *back.Candidates[1].Disagreements[2].Candidate.Correct != true {
		t.Errorf("the JSON does not hold the report whole:\n%s\n%s", again, first)
	}
	// No trials yet: each rendering says so.
	var none bytes.Buffer
	empty := New(nil, Config{Now: now})
	if err := empty.WriteText(&none); err != nil || !strings.Contains(none.String(), "0 candidate versions") {
		t.Errorf("the empty text report: %q, %v", none.String(), err)
	}
	none.Reset()
	if err := empty.WriteHTML(&none); err != nil || !strings.Contains(none.String(), "No shadow trials yet.") {
		t.Errorf("the empty page: %v", err)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	for _, want := range []string{
		"candidate sha256:cand0000000a (instructions hash c0ffeeA, model gpt-4o) against production sha256:prod00000000",
		"agreement      4 of 12 (0.333)",
		"labelled       10 (9 recategorized, 1 confirmed after 168h0m0s)",
		"production 0.200 (2 of 10; 95% Wilson 0.057 to 0.510)",
		"candidate  0.800 (8 of 10; 95% Wilson 0.490 to 0.943)",
		"the candidate is better: 6 right with the candidate only, 0 with production only; McNemar's exact test p 0.0313",
		"promote        version sha256:cand0000000a: set BRAINWIRE_INSTRUCTIONS to the candidate's file and restart serve",
		"next           point BRAINWIRE_SHADOW_INSTRUCTIONS at the next candidate's file and restart serve",
		"i10 [both wrong]", "https://jaeger.example/trace/" + fmt.Sprintf("%032x", 10),
		"Production read i10 as Admin.", "The candidate read i10 as People.",
		"candidate sha256:cand0000000b", "no labelled captures yet", "not distinguishable",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q", want)
		}
	}
}

// TestReasoningOnThePage: an excerpt's **title** markup is bold on the
// page, its text escaped, and a ** never closed left as written.
func TestReasoningOnThePage(t *testing.T) {
	for in, want := range map[string]string{
		"**Classifying the capture** a <b> & c": "<strong>Classifying the capture</strong> a &lt;b&gt; &amp; c",
		"**One** and **Two** then **open":       "<strong>One</strong> and <strong>Two</strong> then **open",
		"no markup":                             "no markup",
	} {
		if got := string(reasoningHTML(in)); got != want {
			t.Errorf("reasoningHTML(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestVerdictNeedsSixToNone: five discordant pairs one way cannot reach
// 0.05 (p = 2·2⁻⁵ = 1/16), six can (1/32), in either direction.
func TestVerdictNeedsSixToNone(t *testing.T) {
	for _, c := range []struct {
		n          int
		candRight  bool
		wantP      float64
		wantResult eval.Verdict
	}{
		{5, false, 1.0 / 16, eval.NotDistinguishable},
		{6, false, 1.0 / 32, eval.Worse},
		{6, true, 1.0 / 32, eval.Better},
	} {
		var rows []row
		for i := range c.n {
			r := row{id: fmt.Sprint("v", i), cand: "A", pOut: cl, pB: "People", pConf: 0.9, cOut: cl, cB: "Ideas", cConf: 0.9, recategorize: "People"}
			if c.candRight {
				r.recategorize = "Ideas"
			}
			rows = append(rows, r)
		}
		got := New(items(rows), Config{Now: now}).Candidates[0]
		if math.Abs(got.PValue-c.wantP) > 1e-12 || got.Verdict != c.wantResult {
			t.Errorf("%d discordant, candidate right %v: p %v %s, want %v %s", c.n, c.candRight, got.PValue, got.Verdict, c.wantP, c.wantResult)
		}
	}
}
