package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/shadowreport"
	"github.com/brainwire/brainwire/sqlite"
)

// closeSpy is the store the command opens, noting that it was closed.
type closeSpy struct {
	*sqlite.Store
	closed *bool
}

func (s closeSpy) Close() error { *s.closed = true; return s.Store.Close() }

// keepTrials puts items into a SQLite store in dir as serve leaves them:
// filed at their creation, recategorized by the person where their label
// says so, their trial kept by RecordShadow.
func keepTrials(t *testing.T, dir string, items []brainwire.InboxItem) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "brainwire.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, it := range items {
		moved := it.ClassificationMeta.ClassifiedBy == server.ClassifiedByUser
		at := it.UpdatedAt // a filing left alone was last touched when filed
		if moved {
			at = it.CreatedAt
		}
		filed := *it.ClassificationMeta
		filed.Bucket, filed.ClassifiedBy = it.AgentRun.Bucket, "Classifier"
		if _, err := st.File(t.Context(), brainwire.Filing{UserID: it.UserID, NewInboxID: it.ID, NewRecordID: "rec-" + it.ID,
			RawText: it.RawText, Title: it.ID, Source: it.Source, Status: it.Status, Classification: filed,
			AgentRun: it.AgentRun, Now: at}); err != nil {
			t.Fatal(err)
		}
		if moved {
			if _, err := st.Recategorize(t.Context(), it.UserID, it.ID, it.ClassificationMeta.Bucket, "moved-"+it.ID, server.ClassifiedByUser, it.UpdatedAt); err != nil {
				t.Fatal(err)
			}
		}
		if it.Shadow != nil {
			if err := st.RecordShadow(t.Context(), it.UserID, it.ID, *it.Shadow); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// shadowTrials are the command test's captures. By hand, with -confirm-after 100h:
//
//	f1–f6  production People (wrong), candidate Ideas, person says Ideas: candidate only right
//	a1–a4  both Admin; a1, a2 left alone 200h (confirmed after), a3, a4 recategorized Admin
//	w1–w2  both Projects, person says People: both wrong, agreed
//	u1     (bob) production Admin, candidate Ideas, filed 1h ago: unlabelled
//	n1     no trial
//
// pairs 13, agreed 6; labelled 12 (10 recategorized, 2 confirmed after);
// production right 4 of 12, candidate 10 of 12; discordant 6 to 0, so
// McNemar's exact p = 2·2⁻⁶ = 0.03125 < 0.05: better. Disagreements 7.
func shadowTrials(now time.Time) []brainwire.InboxItem {
	type c struct {
		id, user, prod, cand, label string
		age                         time.Duration
		noTrial                     bool
	}
	var cs []c
	for i := 1; i <= 6; i++ {
		cs = append(cs, c{id: fmt.Sprintf("f%d", i), user: "alice", prod: "People", cand: "Ideas", label: "Ideas"})
	}
	cs = append(cs, c{id: "a1", user: "alice", prod: "Admin", cand: "Admin", age: 200 * time.Hour},
		c{id: "a2", user: "alice", prod: "Admin", cand: "Admin", age: 200 * time.Hour},
		c{id: "a3", user: "alice", prod: "Admin", cand: "Admin", label: "Admin"},
		c{id: "a4", user: "alice", prod: "Admin", cand: "Admin", label: "Admin"},
		c{id: "w1", user: "alice", prod: "Projects", cand: "Projects", label: "People"},
		c{id: "w2", user: "alice", prod: "Projects", cand: "Projects", label: "People"},
		c{id: "u1", user: "bob", prod: "Admin", cand: "Ideas", age: time.Hour},
		c{id: "n1", user: "bob", prod: "Admin", label: "People", noTrial: true})
	var out []brainwire.InboxItem
	for n, x := range cs {
		at := now.Add(-300*time.Hour + time.Duration(n)*time.Minute)
		prod := brainwire.AgentRun{RunID: "run-" + x.id, AgentVersion: "sha256:1111aaaa2222", Outcome: brainwire.OutcomeClassified,
			Bucket: x.prod, Confidence: 0.8, TraceID: fmt.Sprintf("%032x", 0xa000+n), SpanID: fmt.Sprintf("%016x", n+1)}
		it := brainwire.InboxItem{ID: x.id, UserID: x.user, RawText: "capture " + x.id + " <b>as typed</b>", Source: brainwire.KindVoice,
			Status: brainwire.StatusClassified, AgentRun: &prod, CreatedAt: at, UpdatedAt: now.Add(-x.age),
			ClassificationMeta: &brainwire.Classification{Bucket: x.prod, Confidence: 0.8, ClassifiedBy: "Classifier"}}
		if x.label != "" {
			it.ClassificationMeta.Bucket, it.ClassificationMeta.ClassifiedBy = x.label, server.ClassifiedByUser
		}
		if !x.noTrial {
			it.Shadow = &brainwire.ShadowTrial{Production: prod, At: at.Add(time.Second),
				Candidate: brainwire.AgentRun{RunID: "shadow-" + x.id, AgentVersion: "sha256:3333bbbb4444", Outcome: brainwire.OutcomeClassified,
					Bucket: x.cand, Confidence: 0.9, TraceID: fmt.Sprintf("%032x", 0xb000+n), SpanID: fmt.Sprintf("%016x", n+1)},
				ProductionReasoning: "production on " + x.id + ": sounds like " + x.prod,
				CandidateReasoning:  "candidate on " + x.id + ": sounds like " + x.cand}
		}
		out = append(out, it)
	}
	return out
}

func TestShadowReportCommand(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	data := t.TempDir()
	keepTrials(t, data, shadowTrials(now))
	var closed bool
	open := func(ctx context.Context, getenv func(string) string, log *slog.Logger) (reportStore, error) {
		st, err := openReportStore(ctx, getenv, log)
		if err != nil {
			return nil, err
		}
		return closeSpy{st.(*sqlite.Store), &closed}, nil
	}
	env := envFunc(map[string]string{"BRAINWIRE_DATA_DIR": data, "BRAINWIRE_SHADOW_CONFIRM_AFTER": "100h"})
	page := t.TempDir() + "/shadow.html"
	const traceURL = "http://localhost:16686/trace/{trace_id}"
	var out, errb bytes.Buffer
	if err := shadowReport(t.Context(), []string{"-json", "-html", page, "-trace-url", traceURL}, env, &out, &errb, open, now); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !closed {
		t.Error("the store was left open")
	}
	var rep shadowreport.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("-json: %v\n%s", err, out.String())
	}
	if len(rep.Candidates) != 1 {
		t.Fatalf("%d candidates, want 1", len(rep.Candidates))
	}
	c := rep.Candidates[0]
	lo4, hi4 := wilson95(4, 12)
	lo10, hi10 := wilson95(10, 12)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if c.Version != "sha256:3333bbbb4444" || c.Pairs != 13 || c.Agreed != 6 || c.Labelled != 12 || c.Recategorized != 10 ||
		c.ConfirmedAfter != 2 || c.ProductionCorrect != 4 || c.CandidateCorrect != 10 || c.CandidateOnly != 6 || c.ProductionOnly != 0 ||
		!near(c.PValue, 0.03125) || c.Verdict != eval.Better || len(c.Disagreements) != 7 || rep.ConfirmAfter != "100h0m0s" ||
		!near(c.ProductionAccuracy.Low, lo4) || !near(c.ProductionAccuracy.High, hi4) ||
		!near(c.CandidateAccuracy.Low, lo10) || !near(c.CandidateAccuracy.High, hi10) {
		t.Errorf("the report is not the hand-computed one: %+v", c)
	}
	// -confirm-after overrides the environment: at 0 the two left alone
	// are no labels.
	out.Reset()
	if err := shadowReport(t.Context(), []string{"-confirm-after", "0", "-user", "alice"}, env, &out, &errb, open, now); err != nil {
		t.Fatal(err)
	}
	if want := "labelled       10 (10 recategorized, 0 confirmed after 0s)"; !strings.Contains(out.String(), want) {
		t.Errorf("-confirm-after 0: the text lacks %q:\n%s", want, out.String())
	}
	checkShadowPage(t, page, c)
}

// wilson95 is the Wilson score interval of k of n, from its definition.
func wilson95(k, n float64) (float64, float64) {
	const z = 1.959963984540054
	p := k / n
	mid := (p + z*z/(2*n)) / (1 + z*z/n)
	half := z / (1 + z*z/n) * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	return mid - half, mid + half
}

// checkShadowPage reads the page's figures against the report, in the
// file and as headless Chromium renders it, whose screenshot must show the
// verdict's banner and both arms' bars.
func checkShadowPage(t *testing.T, path string, c shadowreport.Candidate) {
	t.Helper()
	checkPage(t, path, c.Verdict, func(where, page string) { checkShadowFigures(t, where, page, c) })
}

func checkShadowFigures(t *testing.T, where, page string, c shadowreport.Candidate) {
	t.Helper()
	byMetric, cases, links := figures(t, page)
	for metric, want := range map[string]struct {
		v    float64
		text string
	}{
		"pairs":                    {13, "13"},
		"agreed":                   {6, "6"},
		"agreement":                {6.0 / 13, "46.15%"},
		"labelled":                 {12, "12"},
		"recategorized":            {10, "10"},
		"confirmed-after":          {2, "2"},
		"production-accuracy":      {c.ProductionAccuracy.Estimate, "0.333"},
		"production-accuracy-low":  {c.ProductionAccuracy.Low, fmt.Sprintf("%.3f", c.ProductionAccuracy.Low)},
		"production-accuracy-high": {c.ProductionAccuracy.High, fmt.Sprintf("%.3f", c.ProductionAccuracy.High)},
		"candidate-accuracy":       {c.CandidateAccuracy.Estimate, "0.833"},
		"candidate-accuracy-low":   {c.CandidateAccuracy.Low, fmt.Sprintf("%.3f", c.CandidateAccuracy.Low)},
		"candidate-accuracy-high":  {c.CandidateAccuracy.High, fmt.Sprintf("%.3f", c.CandidateAccuracy.High)},
		"candidate-only":           {6, "6"},
		"production-only":          {0, "0"},
		"p-value":                  {c.PValue, "0.0313"},
		"disagreements":            {7, "7"},
	} {
		fs := byMetric[metric]
		if len(fs) != 1 {
			t.Errorf("%s: %d elements with data-metric %q, want 1", where, len(fs), metric)
			continue
		}
		v, err := strconv.ParseFloat(fs[0].attrs["data-value"], 64)
		if err != nil || math.Abs(v-want.v) > 1e-12 || fs[0].text != want.text {
			t.Errorf("%s: %s is %q, shown %q; want %v, %q", where, metric, fs[0].attrs["data-value"], fs[0].text, want.v, want.text)
		}
	}
	if v := byMetric["verdict"]; len(v) != 1 || v[0].attrs["data-value"] != "better" || !strings.HasPrefix(v[0].text, "The candidate is better") {
		t.Errorf("%s: verdict %v, want better", where, v)
	}
	if v := byMetric["version"]; len(v) != 1 || v[0].text != "sha256:3333bbbb4444" {
		t.Errorf("%s: version %v", where, v)
	}
	want := map[string]string{"u1": "unlabelled"}
	for i := 1; i <= 6; i++ {
		want[fmt.Sprintf("f%d", i)] = "fixed"
	}
	if fmt.Sprint(cases) != fmt.Sprint(want) {
		t.Errorf("%s: disagreements %v, want %v", where, cases, want)
	}
	for _, d := range c.Disagreements {
		for _, a := range []shadowreport.Arm{d.Production, d.Candidate} {
			if links[a.RunID] != "http://localhost:16686/trace/"+a.TraceID {
				t.Errorf("%s: %s's %s links to %q", where, d.ItemID, a.RunID, links[a.RunID])
			}
			if !strings.Contains(page, a.Reasoning) {
				t.Errorf("%s: %s's excerpt %q is not on the page", where, d.ItemID, a.Reasoning)
			}
		}
		if !strings.Contains(page, "capture "+d.ItemID+" &lt;b&gt;as typed&lt;/b&gt;") {
			t.Errorf("%s: %s's text is not on the page, escaped", where, d.ItemID)
		}
	}
	if len(links) != 2*len(c.Disagreements) {
		t.Errorf("%s: %d trace links, want %d", where, len(links), 2*len(c.Disagreements))
	}
	if !strings.Contains(page, "make version sha256:3333bbbb4444 production, set BRAINWIRE_INSTRUCTIONS to the candidate") {
		t.Errorf("%s: the page does not say how to promote the candidate", where)
	}
}
