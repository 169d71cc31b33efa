package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/shadowreport"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// shadowCandidate is the candidate instructions of the end-to-end trial.
// Its two rule lines steer the simulator's keyword classifier: "buy",
// an Admin cue, becomes an Ideas cue, and "dentist", another, no cue at
// all, so that a capture whose only cue it is is misunderstood.
const shadowCandidate = `Classify the capture into one of the four buckets.
Ideas cues: buy
Ignore cues: dentist
`

// shadowCapture is one capture of the workload: what each arm files by
// the simulator's rules (simulator/doc.go) and the bucket the person
// moves it to, if any.
type shadowCapture struct {
	text string
	prod string // production's bucket: every capture is classified by the default instructions
	cand string // the candidate's bucket, "" when it is misunderstood
	move string // the person's recategorize, "" for none
}

// shadowWorkload, by the rules as stated: each capture's cues are all of
// one bucket (a single cue scores 0.65, classified), except where the
// candidate moved "buy" or ignores "dentist".
var shadowWorkload = []shadowCapture{
	{"Call mom about her birthday on Sunday", "People", "People", "Projects"}, // agreed, both wrong
	{"Draft the launch deck for the roadmap", "Projects", "Projects", ""},
	{"What if we could imagine a new concept", "Ideas", "Ideas", ""},
	{"Renew the car insurance before Friday", "Admin", "Admin", "Admin"}, // agreed, both right
	{"Pay the electricity bill", "Admin", "Admin", ""},
	{"Finish the website feature", "Projects", "Projects", ""},
	{"Brainstorm a startup idea someday", "Ideas", "Ideas", ""},
	{"Buy a new lamp for the hall", "Admin", "Ideas", "Ideas"}, // the candidate's bucket
	{"Buy stamps at the post office", "Admin", "Ideas", "Ideas"},
	{"Buy paint for the fence", "Admin", "Ideas", "Ideas"},
	{"Buy more printer ink", "Admin", "Ideas", "Ideas"},
	{"Buy new running shoes", "Admin", "Ideas", "People"}, // neither
	{"Call the dentist on Monday", "Admin", "", "Admin"},  // production's bucket: the candidate asked
}

// phoneRun is what the phone saw of one capture.
type phoneRun struct {
	types  []string
	bucket string
	itemID string
	runID  string
}

// TestShadowTrialEndToEnd runs serve on the simulator's Responses face
// and SQLite with candidate instructions in shadow, at sample 1 and 0.5,
// sends the workload's captures and the person's recategorizes, and reads
// the trial back through shadow-report over the same data directory and
// through a real OTLP receiver: every figure equals what the workload
// kept, trials exist exactly for the sampled run ids, and the phone saw
// what it sees with shadow off.
func TestShadowTrialEndToEnd(t *testing.T) {
	dir := t.TempDir()
	candPath := filepath.Join(dir, "candidate.md")
	if err := os.WriteFile(candPath, []byte(shadowCandidate), 0o600); err != nil {
		t.Fatal(err)
	}
	cand, err := instructions.Load(candPath)
	if err != nil {
		t.Fatal(err)
	}

	base, _, _ := runServe(t, map[string]string{"BRAINWIRE_DATA_DIR": filepath.Join(dir, "off")})
	var off []phoneRun
	for _, c := range shadowWorkload {
		off = append(off, phoneCapture(t, base, c.text))
	}

	for _, sample := range []float64{1, 0.5} {
		t.Run(fmt.Sprint(sample), func(t *testing.T) {
			data := filepath.Join(dir, fmt.Sprint("data-", sample))
			recv := telemetrytest.NewReceiver(t)
			base, logs, stop := runServe(t, map[string]string{
				"BRAINWIRE_DATA_DIR":            data,
				"BRAINWIRE_SHADOW_INSTRUCTIONS": candPath,
				"BRAINWIRE_SHADOW_SAMPLE":       fmt.Sprint(sample),
				// Above the workload: no sampled capture is dropped busy.
				"BRAINWIRE_SHADOW_CONCURRENCY": "16",
				"OTEL_EXPORTER_OTLP_ENDPOINT":  recv.Endpoint(),
			})
			var runs []phoneRun
			sampled := map[string]bool{} // item ids
			for i, c := range shadowWorkload {
				r := phoneCapture(t, base, c.text)
				runs = append(runs, r)
				if fmt.Sprint(r.types) != fmt.Sprint(off[i].types) || r.bucket != off[i].bucket {
					t.Errorf("%q: the phone saw %v %s with shadow on, %v %s with it off", c.text, r.types, r.bucket, off[i].types, off[i].bucket)
				}
				if r.bucket != c.prod {
					t.Fatalf("%q: production filed %q, the workload says %q", c.text, r.bucket, c.prod)
				}
				if brainwire.ShadowSampled(r.runID, sample) {
					sampled[r.itemID] = true
				}
			}
			env := envFunc(map[string]string{"BRAINWIRE_DATA_DIR": data})

			// The shadows run after the phone's streams ended: wait for
			// every sampled capture's trial before the person's word on
			// it, which scores only an item that carries one.
			deadline := time.Now().Add(30 * time.Second)
			for got := 0; got != len(sampled); {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d trials kept after 30s:\n%s", got, len(sampled), logs)
				}
				time.Sleep(50 * time.Millisecond)
				got = 0
				for _, c := range shadowReportJSON(t, env, "-confirm-after", "0").Candidates {
					got += c.Pairs
				}
			}
			for i, c := range shadowWorkload {
				if c.move != "" {
					recategorize(t, base, runs[i].itemID, c.move)
				}
			}
			if err := stop(); err != nil {
				t.Fatalf("serve: %v", err)
			}

			// The trials are on exactly the sampled captures' items, paired
			// with the run the phone was told of.
			store, err := openReportStore(t.Context(), env, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			items, err := shadowreport.Read(t.Context(), store, []string{"phone-user"})
			store.Close()
			if err != nil {
				t.Fatal(err)
			}
			trials := map[string]*brainwire.ShadowTrial{}
			for _, it := range items {
				if it.Shadow != nil {
					trials[it.ID] = it.Shadow
				}
			}
			for i, c := range shadowWorkload {
				tr, r := trials[runs[i].itemID], runs[i]
				switch {
				case tr == nil && sampled[r.itemID]:
					t.Errorf("%q (run %s) was sampled and has no trial", c.text, r.runID)
				case tr != nil && !sampled[r.itemID]:
					t.Errorf("%q (run %s) was not sampled and has a trial", c.text, r.runID)
				case tr != nil && (tr.Production.RunID != r.runID || tr.Production.FiledIn() != c.prod ||
					tr.Candidate.FiledIn() != c.cand || tr.Candidate.AgentVersion != cand.Version):
					t.Errorf("%q: trial %+v, want production %s in %s, candidate %s in %q", c.text, tr, r.runID, c.prod, cand.Version, c.cand)
				}
			}

			want := shadowTruth(runs, sampled)
			t.Logf("sample %v: %d of %d captures sampled; truth %+v", sample, len(sampled), len(runs), want)
			checkShadowReport(t, "recategorized only", shadowReportJSON(t, env, "-confirm-after", "0"), want, cand.Version)
			// Left alone for 1ns, every other filing counts as confirmed:
			// production's bucket labels it.
			checkShadowReport(t, "confirmed after 1ns", shadowReportJSON(t, env, "-confirm-after", "1ns"), shadowTruthConfirmed(runs, sampled), cand.Version)

			checkShadowMetrics(t, recv, want, cand.Version)
		})
	}
}

// shadowGround is what a report must say of the workload's trials.
type shadowGround struct {
	pairs, agreed, labelled, recategorized, confirmed int
	prodRight, candRight, candOnly, prodOnly          int
	disagree                                          []string // item ids
	trials                                            map[[3]string]int64
	scored                                            map[[2]string]int64 // arm, correct
}

// shadowTruth computes the report's figures from the workload as stated,
// over the sampled items, labelling only the person's recategorizes.
func shadowTruth(runs []phoneRun, sampled map[string]bool) shadowGround {
	return shadowTruthLabels(runs, sampled, false)
}

// shadowTruthConfirmed is shadowTruth where every item the person left
// alone is labelled with production's bucket.
func shadowTruthConfirmed(runs []phoneRun, sampled map[string]bool) shadowGround {
	return shadowTruthLabels(runs, sampled, true)
}

func shadowTruthLabels(runs []phoneRun, sampled map[string]bool, confirm bool) shadowGround {
	g := shadowGround{trials: map[[3]string]int64{}, scored: map[[2]string]int64{}}
	for i, c := range shadowWorkload {
		id := runs[i].itemID
		if !sampled[id] {
			continue
		}
		g.pairs++
		agree := c.prod == c.cand
		g.trials[[3]string{fmt.Sprint(agree), c.cand, c.prod}]++
		if agree {
			g.agreed++
		} else {
			g.disagree = append(g.disagree, id)
		}
		label := c.move
		if label != "" {
			g.recategorized++
			g.scored[[2]string{telemetry.ArmProduction, fmt.Sprint(c.prod == label)}]++
			g.scored[[2]string{telemetry.ArmCandidate, fmt.Sprint(c.cand == label)}]++
		} else if confirm {
			label = c.prod
			g.confirmed++
		} else {
			continue
		}
		g.labelled++
		pr, cr := c.prod == label, c.cand == label
		for n, yes := range map[*int]bool{&g.prodRight: pr, &g.candRight: cr, &g.prodOnly: pr && !cr, &g.candOnly: cr && !pr} {
			if yes {
				*n++
			}
		}
	}
	slices.Sort(g.disagree)
	return g
}

// checkShadowReport compares a -json report with the ground truth: its
// intervals by Wilson's formula, its p-value by McNemar's exact test
// computed here from the binomial distribution.
func checkShadowReport(t *testing.T, how string, rep shadowreport.Report, g shadowGround, version string) {
	t.Helper()
	if g.pairs == 0 {
		if len(rep.Candidates) != 0 {
			t.Errorf("%s: %d candidates, no trial", how, len(rep.Candidates))
		}
		return
	}
	if len(rep.Candidates) != 1 {
		t.Fatalf("%s: %d candidates, want 1", how, len(rep.Candidates))
	}
	c := rep.Candidates[0]
	var disagree []string
	for _, d := range c.Disagreements {
		disagree = append(disagree, d.ItemID)
	}
	slices.Sort(disagree)
	got := fmt.Sprintf("pairs %d agreed %d labelled %d (%d recategorized, %d confirmed) right: production %d candidate %d; discordant %d candidate-only, %d production-only; disagreements %v",
		c.Pairs, c.Agreed, c.Labelled, c.Recategorized, c.ConfirmedAfter, c.ProductionCorrect, c.CandidateCorrect, c.CandidateOnly, c.ProductionOnly, disagree)
	want := fmt.Sprintf("pairs %d agreed %d labelled %d (%d recategorized, %d confirmed) right: production %d candidate %d; discordant %d candidate-only, %d production-only; disagreements %v",
		g.pairs, g.agreed, g.labelled, g.recategorized, g.confirmed, g.prodRight, g.candRight, g.candOnly, g.prodOnly, g.disagree)
	t.Logf("%s: %s", how, got)
	if got != want {
		t.Errorf("%s:\n got %s\nwant %s", how, got, want)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if prod := instructions.Default().Version; c.Version != version || fmt.Sprint(c.Production) != fmt.Sprint([]string{prod}) ||
		!near(c.Agreement, float64(g.agreed)/float64(g.pairs)) {
		t.Errorf("%s: version %s against %v, agreement %v; want %s against %s, %v", how, c.Version, c.Production, c.Agreement,
			version, prod, float64(g.agreed)/float64(g.pairs))
	}
	for _, a := range []struct {
		arm   string
		got   eval.Interval
		right int
	}{{"production", c.ProductionAccuracy, g.prodRight}, {"candidate", c.CandidateAccuracy, g.candRight}} {
		if g.labelled == 0 {
			continue
		}
		lo, hi := wilson95(float64(a.right), float64(g.labelled))
		if !near(a.got.Estimate, float64(a.right)/float64(g.labelled)) || !near(a.got.Low, lo) || !near(a.got.High, hi) {
			t.Errorf("%s: %s accuracy %+v, want %d/%d [%v, %v]", how, a.arm, a.got, a.right, g.labelled, lo, hi)
		}
	}
	p := mcnemarExact(g.candOnly, g.prodOnly)
	verdict := eval.NotDistinguishable
	if p < eval.Alpha {
		verdict = map[bool]eval.Verdict{true: eval.Better, false: eval.Worse}[g.candOnly > g.prodOnly]
	}
	t.Logf("%s: p %v verdict %s; accuracy production %+v candidate %+v", how, c.PValue, c.Verdict, c.ProductionAccuracy, c.CandidateAccuracy)
	if !near(c.PValue, p) || c.Verdict != verdict {
		t.Errorf("%s: p %v %s, want %v %s", how, c.PValue, c.Verdict, p, verdict)
	}
}

// mcnemarExact is McNemar's exact test on b and c discordant pairs: twice
// the binomial(b+c, ½) tail at the smaller count, at most 1.
func mcnemarExact(b, c int) float64 {
	n := b + c
	tail, choose := 0.0, 1.0
	for i := 0; i <= min(b, c); i++ {
		tail += choose / math.Pow(2, float64(n))
		choose = choose * float64(n-i) / float64(i+1)
	}
	return math.Min(1, 2*tail)
}

// checkShadowMetrics reads the shadow counters serve exported when it
// stopped: the trials by agreement and buckets, the scores by arm and
// correctness, no drop.
func checkShadowMetrics(t *testing.T, recv *telemetrytest.Receiver, g shadowGround, version string) {
	t.Helper()
	trials, scored := map[[3]string]int64{}, map[[2]string]int64{}
	var dropped int64
	sum := func(name string, each func(attr func(string) string, v int64)) {
		m := recv.Metric(name)
		if m == nil {
			t.Errorf("no %s exported", name)
			return
		}
		for _, dp := range m.GetSum().GetDataPoints() {
			attr := func(k string) string {
				v := telemetrytest.Attr(dp.GetAttributes(), k)
				if v == nil {
					return ""
				}
				return fmt.Sprint(v)
			}
			if dp.GetAsInt() != 0 {
				each(attr, dp.GetAsInt())
			}
		}
	}
	sum(telemetry.MetricShadowTrials, func(a func(string) string, v int64) {
		if a(string(telemetry.AttrShadowVersion)) != version || a("gen_ai.agent.version") != instructions.Default().Version {
			t.Errorf("a trial counted for version %q against %q", a(string(telemetry.AttrShadowVersion)), a("gen_ai.agent.version"))
		}
		trials[[3]string{a(string(telemetry.AttrShadowAgree)), a(string(telemetry.AttrShadowCandidateBucket)), a(string(telemetry.AttrShadowProductionBucket))}] += v
	})
	sum(telemetry.MetricShadowScored, func(a func(string) string, v int64) {
		scored[[2]string{a(string(telemetry.AttrShadowArm)), a(string(telemetry.AttrShadowCorrect))}] += v
	})
	sum(telemetry.MetricShadowDropped, func(_ func(string) string, v int64) { dropped += v })
	t.Logf("metrics: trials %v scored %v dropped %d", trials, scored, dropped)
	if fmt.Sprint(trials) != fmt.Sprint(g.trials) || fmt.Sprint(scored) != fmt.Sprint(g.scored) || dropped != 0 {
		t.Errorf("metrics: trials %v, scored %v, dropped %d; want %v, %v, 0", trials, scored, dropped, g.trials, g.scored)
	}
}

// shadowReportJSON runs shadow-report -json with args over the store env
// names, as the command does.
func shadowReportJSON(t *testing.T, env func(string) string, args ...string) shadowreport.Report {
	t.Helper()
	var out, errb bytes.Buffer
	if err := shadowReportCmd(t.Context(), append([]string{"-json"}, args...), env, &out, &errb); err != nil {
		t.Fatalf("shadow-report %v: %v\n%s", args, err, errb.String())
	}
	var rep shadowreport.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("shadow-report -json: %v\n%s", err, out.String())
	}
	return rep
}

// phoneCapture posts text to /api/capture as the phone does and reads its
// stream to the end.
func phoneCapture(t *testing.T, base, text string) phoneRun {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	sse := phoneCall(t, base, "/api/capture", string(body))
	var r phoneRun
	sc := bufio.NewScanner(strings.NewReader(sse))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string
			RunID string `json:"runId"`
			Value struct {
				InboxItemID string `json:"inboxItemId"`
				Bucket      string `json:"bucket"`
			}
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("frame %q: %v", line, err)
		}
		r.types = append(r.types, ev.Type)
		r.bucket, r.itemID = cmp.Or(r.bucket, ev.Value.Bucket), cmp.Or(r.itemID, ev.Value.InboxItemID)
		r.runID = cmp.Or(r.runID, ev.RunID)
	}
	if r.runID == "" || r.itemID == "" {
		t.Fatalf("%q: no run id or item id in the stream:\n%s", text, sse)
	}
	return r
}

// recategorize moves an item as the person does from the inbox.
func recategorize(t *testing.T, base, id, bucket string) {
	t.Helper()
	phoneCall(t, base, "/api/inbox/"+id+"/recategorize", `{"bucket":"`+bucket+`"}`)
}

// phoneCall POSTs body to serve at base as the phone does, and returns
// the answer of a call that must succeed.
func phoneCall(t *testing.T, base, path, body string) string {
	t.Helper()
	a := call(t, &replica{base: base}, http.MethodPost, path, body)
	if a.status != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, a.status, a.body)
	}
	return a.body
}
