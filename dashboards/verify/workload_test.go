package verify

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/instructions"
	"github.com/brainwire/brainwire/internal/process"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/telemetry/appinsights"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

const apiKey = "verify-key-0123456789abcdef"

// stopGrace is how long a process told to stop may take to drain and
// flush its telemetry.
const stopGrace = 20 * time.Second

// run is one agent run as the dashboard should count it.
type run struct {
	job, instance, version, kind, outcome, bucket string
	confidence                                    float64
	hasConfidence                                 bool
	ttoMS, chunks, inTokens, outTokens            int64
	hasUsage                                      bool
	runID, traceID, spanID, evalRunID             string
	at                                            time.Time // when the capture was sent
}

// correction is one recategorize: what the agent had decided and where the
// person put the item.
type correction struct {
	job, version, agentOutcome, agentBucket, human string
	repeat                                         bool // the person had moved the item before
	at                                             time.Time
}

// label is the verdict: correct when the person kept the bucket the agent
// filed.
func (c correction) label() string {
	if (c.agentOutcome == "classified" || c.agentOutcome == "low_confidence") && c.agentBucket == c.human {
		return "correct"
	}
	return "incorrect"
}

// followUp is one answer to a clarifying question: what the run that
// asked had decided (its version and outcome), the round, and what the
// follow-up made of the capture (its outcome, and its bucket when it filed
// one).
type followUp struct {
	job, version, agentOutcome string
	round                      int
	outcome, bucket            string
	at                         time.Time
}

type toolError struct {
	job, version, tool, errType string
	at                          time.Time
}

// upstreamError is an error from the agent service: one that reached the
// capture, or a failed attempt sent again (retried), which it never saw.
type upstreamError struct {
	job, version, errType, source string
	retried                       bool
	at                            time.Time
}

// upstreamRetry is a call to the agent service sent again after the
// service refused it.
type upstreamRetry struct {
	job, version, op, status string
	at                       time.Time
}

// replay is a repeat of a capture's Idempotency-Key answered with the
// first capture's outcome.
type replay struct {
	job, outcome, kind string
	at                 time.Time
}

// truth is everything the workload did, from what the phones, the inbox
// and the evaluations' reports said, with each run's measurements (time to
// outcome, tokens, chunks, confidence) from its trace.
type truth struct {
	runs        []run
	corrections []correction
	followUps   []followUp
	toolErrors  []toolError
	upstream    []upstreamError
	retries     []upstreamRetry
	replays     []replay
	// ranAgain are repeats of a capture that filed nothing: they ran
	// afresh instead of replaying.
	ranAgain  int
	v1, v2    string      // the two instructions versions
	candidate string      // the shadow candidate's version, on serve-a and serve-b2
	aiItems   []time.Time // when Application Insights accepted each item the serve replicas sent
	// shadowThrottled are the captures on a shadowed replica whose
	// candidate the simulator refused (#refuse:429 refuses every call of
	// a text once): production retried and filed, the shadow is dropped.
	shadowThrottled []time.Time
	// shadowTrials are the captures a shadowed replica sampled and filed
	// whose candidate ran; shadowScores are both arms' scores at a
	// person's first recategorize of such an item.
	shadowTrials []shadowTrial
	shadowScores []shadowScore
	evalRuns     []string
	// start is before the first process started; end is after Prometheus
	// scraped the last export of the last process. restart is in the quiet
	// between the two rounds, when one replica restarts and the other has
	// been running for a while: a window from there sees series born long
	// after their process started.
	start, restart, end time.Time
	// evalCases are the evaluations' case runs, each trial, right or
	// wrong as their reports say.
	evalCases []evalCase
}

// since is the part of the truth from t on.
func (tr *truth) since(t time.Time) *truth {
	out := *tr
	out.runs = from(tr.runs, t, func(r run) time.Time { return r.at })
	out.corrections = from(tr.corrections, t, func(c correction) time.Time { return c.at })
	out.followUps = from(tr.followUps, t, func(f followUp) time.Time { return f.at })
	out.toolErrors = from(tr.toolErrors, t, func(e toolError) time.Time { return e.at })
	out.upstream = from(tr.upstream, t, func(e upstreamError) time.Time { return e.at })
	out.retries = from(tr.retries, t, func(e upstreamRetry) time.Time { return e.at })
	out.replays = from(tr.replays, t, func(e replay) time.Time { return e.at })
	out.aiItems = from(tr.aiItems, t, func(at time.Time) time.Time { return at })
	out.shadowTrials = from(tr.shadowTrials, t, func(s shadowTrial) time.Time { return s.at })
	out.shadowThrottled = from(tr.shadowThrottled, t, func(at time.Time) time.Time { return at })
	out.shadowScores = from(tr.shadowScores, t, func(s shadowScore) time.Time { return s.at })
	out.evalCases = from(tr.evalCases, t, func(c evalCase) time.Time { return c.at })
	return &out
}

// from keeps the events of xs that happened at t or later.
func from[T any](xs []T, t time.Time, at func(T) time.Time) []T {
	var out []T
	for _, x := range xs {
		if !at(x).Before(t) {
			out = append(out, x)
		}
	}
	return out
}

// shadowTrial is a capture tried in shadow: the bucket production filed
// it in as the phone saw it, and the one the candidate files that text in
// (candidateFiles); "" when an arm filed nothing.
type shadowTrial struct {
	at                    time.Time
	itemID, version       string // version: production's
	production, candidate string
	// label is the bucket the person last moved the item to ("" when
	// never), as the shadow report labels it.
	label string
}

// agree is the trial's agreement: the same filing, or neither filing.
func (s shadowTrial) agree() bool { return s.production == s.candidate }

// shadowScore is one arm of a trial scored against a person's first
// recategorize: correct when the arm filed the capture in that bucket.
type shadowScore struct {
	at      time.Time
	arm     string // production, candidate
	correct bool
}

// replica is one `brainwire serve` process.
type replica struct {
	name, base, version string
	p                   *process.Proc
	// shadowSample is the share of its captures it runs the candidate
	// on in shadow (0: none); brainwire.ShadowSampled says which.
	shadowSample float64
}

// shadows tells whether r runs the candidate beside production on the
// capture that made run runID.
func (r *replica) shadows(runID string) bool {
	return r.shadowSample > 0 && brainwire.ShadowSampled(runID, r.shadowSample)
}

// workload drives the script.
type workload struct {
	s       *stack
	ctx     context.Context
	simURL  string
	dataDir string
	tr      *truth
	// phone holds what the phones saw, by run id.
	phone map[string]phoneRun
	// judged are the items a person has already moved.
	judged map[string]bool
	// byText are the items each text was filed as, in order.
	byText map[string][]filedItem
	// expected tool errors and upstream errors, by run id.
	wantToolErrors map[string]string
	wantUpstream   map[string]bool
	// wantResends are the retries each refused run's trace must show.
	wantResends map[string]int
	// keyN numbers the Idempotency-Keys the phones send.
	keyN int
}

type phoneRun struct {
	job, version, kind, outcome string
	at                          time.Time
}

type filedItem struct {
	id, outcome string
	r           *replica
}

// texts is each replica's share of one round of captures: every outcome,
// a tool error the agent recovers from, a second call refused, an upstream
// failure, a text the two instructions versions file differently, and a
// long run.
var texts = []string{
	"Call mom about her birthday on Sunday",
	"Finish the quarterly report draft by Thursday",
	"Pay the electricity bill",
	"What if we painted the kitchen green someday",
	"#invalid-bucket Renew my passport before June",
	"#two-calls Lunch with Sarah about the project launch deadline",
	"Meet Jonas to review the project roadmap",
	"asdf qwerty zxcv",
	"#no-tool Call the dentist",
	"#fail Lunch with Sarah",
	"Go to the gym after work",
	// A long chain of thought: later buckets of the time-to-outcome and
	// reasoning-chunk histograms.
	"#long:400 Plan the garden party with my sister",
}

// candidateRules are the shadow candidate's lines beyond the built-in
// instructions: the simulator's rules, so that the arms file some of the
// texts differently and agree on the rest.
const candidateRules = "\nPeople cues: gym\nProjects cues: launch deadline\nIdeas cues: garden party\n"

// candidateFiles is where the candidate files each text a shadowed
// replica may file ("" when it asks instead): the built-in instructions'
// bucket, but for its three rules. The built-in instructions do not
// understand the gym, and the errands instructions make it Admin; the
// launch deadline outweighs Sarah, the garden party the sister. The
// candidate recovers from the invalid bucket and files once of two calls,
// as production does.
var candidateFiles = map[string]string{
	"Call mom about her birthday on Sunday":                         "People",
	"Finish the quarterly report draft by Thursday":                 "Projects",
	"Pay the electricity bill":                                      "Admin",
	"What if we painted the kitchen green someday":                  "Ideas",
	"#invalid-bucket Renew my passport before June":                 "Admin",
	"#two-calls Lunch with Sarah about the project launch deadline": "Projects",
	"Meet Jonas to review the project roadmap":                      "Projects",
	"asdf qwerty zxcv":                                              "",
	"Go to the gym after work":                                      "People",
	"#long:400 Plan the garden party with my sister":                "Ideas",
	"#refuse:429 Pay the water bill":                                "Admin",
	"Renew the car insurance before Friday":                         "Admin",
	"zxcv asdf qwerty":                                              "",
}

func runWorkload(ctx context.Context, s *stack) (*truth, error) {
	w := &workload{s: s, ctx: ctx, tr: &truth{start: time.Now()}, dataDir: filepath.Join(s.dir, "data"),
		phone: map[string]phoneRun{}, judged: map[string]bool{}, byText: map[string][]filedItem{},
		wantToolErrors: map[string]string{}, wantUpstream: map[string]bool{}, wantResends: map[string]int{}}
	errands, err := filepath.Abs(filepath.Join(root, "eval", "testdata", "instructions-errands.txt"))
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(errands)
	if err != nil {
		return nil, err
	}
	w.tr.v1, w.tr.v2 = instructions.Default().Version, brainwire.ContentVersion(string(b))

	// One simulator for every process, as replicas share one agent service.
	simAddr, err := process.FreeAddr()
	if err != nil {
		return nil, err
	}
	sim, err := s.run("sim", nil, "sim", "-addr", simAddr, "-chunk-delay", "1ms")
	if err != nil {
		return nil, err
	}
	if err := sim.WaitReady(ctx, 30*time.Second, process.Listening(simAddr)); err != nil {
		return nil, err
	}
	w.simURL = "http://" + simAddr

	// A runs a candidate beside production on every capture it files;
	// B, after its restart, on half of them.
	candidate := filepath.Join(s.dir, "candidate.txt")
	if err := os.WriteFile(candidate, []byte(instructions.Default().Text+candidateRules), 0o644); err != nil {
		return nil, err
	}
	w.tr.candidate = brainwire.ContentVersion(instructions.Default().Text + candidateRules)
	a, err := w.startReplica("serve-a", "", w.tr.v1, map[string]string{
		"BRAINWIRE_SHADOW_INSTRUCTIONS": candidate,
		"BRAINWIRE_SHADOW_SAMPLE":       "1",
		"BRAINWIRE_SHADOW_CONCURRENCY":  "64",
	})
	if err != nil {
		return nil, err
	}
	bb, err := w.startReplica("serve-b", "", w.tr.v1, nil)
	if err != nil {
		return nil, err
	}
	// Round 1: both replicas on the built-in instructions; A fails no
	// run and files nothing unresolved yet, so that those series are born
	// on it in round 2, long after it started.
	if err := w.round(func(r *replica, text string) bool {
		return r != a || !(strings.HasPrefix(text, "#fail") || strings.HasPrefix(text, "#no-tool"))
	}, a, bb); err != nil {
		return nil, err
	}
	if err := w.correctRound1(a, bb); err != nil {
		return nil, err
	}
	// Refusals only on B, and replays answered by B: A's series of
	// them are born in round 2.
	if err := w.refusals(bb); err != nil {
		return nil, err
	}
	asked, err := w.replays1(a, bb)
	if err != nil {
		return nil, err
	}
	// B is restarted with new instructions, as a person ships them.
	if err := bb.p.Stop(stopGrace); err != nil {
		return nil, err
	}
	// A quiet spell: what round 1 made has reached Prometheus before the
	// mark (Application Insights items are sent up to its flush interval
	// later, then counted at the next export and scrape), and round 2
	// begins more than a lookback after it, so that round 1's samples are
	// not round 2's range's start.
	time.Sleep(appinsights.DefaultFlushInterval + exportInterval + 2*scrapeInterval)
	w.tr.restart = time.Now()
	time.Sleep(lookback + scrapeInterval)
	if bb, err = w.startReplica("serve-b2", errands, w.tr.v2, map[string]string{
		"BRAINWIRE_SHADOW_INSTRUCTIONS": candidate,
		"BRAINWIRE_SHADOW_SAMPLE":       "0.5",
		"BRAINWIRE_SHADOW_CONCURRENCY":  "64",
	}); err != nil {
		return nil, err
	}
	if err := w.round(nil, a, bb); err != nil {
		return nil, err
	}
	if err := w.correctRound2(a, bb); err != nil {
		return nil, err
	}
	if err := w.refusals(a, bb); err != nil {
		return nil, err
	}
	if err := w.replays2(bb, a, asked); err != nil {
		return nil, err
	}
	// Two evaluations of the new instructions against the agent's own.
	for i, lines := range [][]int{{0, 10, 20, 30, 40, 45, 49}, {1, 5, 11, 15, 21, 25, 31, 35, 41, 44, 46, 48}} {
		if err := w.evaluate(i, lines, errands); err != nil {
			return nil, err
		}
	}
	for _, r := range []*replica{a, bb} {
		if err := r.p.Stop(stopGrace); err != nil {
			return nil, err
		}
	}
	if err := sim.Stop(stopGrace); err != nil {
		return nil, err
	}
	for _, e := range s.ingest.Envelopes() {
		w.tr.aiItems = append(w.tr.aiItems, e.Received)
	}
	if err := w.collectRuns(); err != nil {
		return nil, err
	}
	// Every process has exported for the last time; once Prometheus has
	// scraped after that, it has everything.
	if s.prom != nil {
		if err := s.prom.waitScrapeAfter(time.Now().Add(scrapeInterval/2), 30*time.Second); err != nil {
			return nil, err
		}
	}
	w.tr.end = time.Now()
	return w.tr, w.covers()
}

// env is a process's configuration: the shared simulator as an agent
// brainwire defines, the shared store, traces to the receiver and metrics
// to the collector.
func (w *workload) env(instructionsFile string) map[string]string {
	env := map[string]string{
		"BRAINWIRE_API_KEYS":                  apiKey + ":verify",
		"BRAINWIRE_DATA_DIR":                  w.dataDir,
		"BRAINWIRE_LOG_FORMAT":                "json",
		"AZURE_AI_PROJECT_ENDPOINT":           w.simURL + simulator.ProjectPath,
		"AZURE_AI_MODEL_DEPLOYMENT_NAME":      simulator.DefaultModel,
		"AZURE_AI_PROJECT_TOKEN":              "verify",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  w.s.traces.Endpoint(),
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": w.s.collectorOTLP,
		"OTEL_METRIC_EXPORT_INTERVAL":         fmt.Sprint(exportInterval.Milliseconds()),
	}
	if instructionsFile != "" {
		env["BRAINWIRE_INSTRUCTIONS"] = instructionsFile
	}
	return env
}

func (w *workload) startReplica(name, instructionsFile, version string, settings map[string]string) (*replica, error) {
	addr, err := process.FreeAddr()
	if err != nil {
		return nil, err
	}
	env := w.env(instructionsFile)
	env["BRAINWIRE_ADDR"] = addr
	env["APPLICATIONINSIGHTS_CONNECTION_STRING"] = w.s.ingest.ConnectionString()
	maps.Copy(env, settings)
	p, err := w.s.run(name, env, "serve")
	if err != nil {
		return nil, err
	}
	r := &replica{name: name, base: "http://" + addr, version: version, p: p}
	if s := settings["BRAINWIRE_SHADOW_SAMPLE"]; s != "" {
		if r.shadowSample, err = strconv.ParseFloat(s, 64); err != nil {
			return nil, err
		}
	}
	return r, p.WaitReady(w.ctx, 30*time.Second, process.Healthy(r.base+"/health"))
}

// capture sends one capture to r (with an Idempotency-Key when key is not
// empty) and remembers what the phone saw; a replay is not a capture.
func (w *workload) capture(r *replica, path string, body map[string]any, kind, text, key string) (phoneEvents, error) {
	at := time.Now()
	ev, err := post(w.ctx, r.base, path, body, key)
	if err != nil {
		return ev, fmt.Errorf("%s %q: %w", r.name, text, err)
	}
	if ev.replayed {
		return ev, fmt.Errorf("%s %q: replayed, want a capture", r.name, text)
	}
	out := strings.ToLower(ev.outcome)
	// A shadow follows a sampled first capture that filed an item, an
	// unresolved one (#no-tool) aside.
	if r.shadows(ev.runID) && path == "/api/capture" && ev.itemID != "" && (isFiled(out) || out == "misunderstood") {
		cand, ok := candidateFiles[text]
		if !ok {
			return ev, fmt.Errorf("%s %q: a shadowed capture whose candidate filing candidateFiles does not state", r.name, text)
		}
		filed := ""
		if isFiled(out) {
			filed = ev.bucket
		}
		w.tr.shadowTrials = append(w.tr.shadowTrials, shadowTrial{at: at, itemID: ev.itemID, version: r.version, production: filed, candidate: cand})
	}
	w.phone[ev.runID] = phoneRun{job: "brainwire", version: r.version, kind: kind, outcome: out, at: at}
	switch {
	case strings.Contains(text, "#invalid-bucket"):
		w.wantToolErrors[ev.runID] = "invalid_bucket"
	case strings.Contains(text, "#two-calls") && out != "misunderstood":
		w.wantToolErrors[ev.runID] = "already_filed"
	case strings.Contains(text, "#fail"):
		w.wantUpstream[ev.runID] = true
	}
	return ev, nil
}

// round sends every text once to each replica, alternating, but those
// skip (when not nil) says a replica does not get.
func (w *workload) round(send func(*replica, string) bool, replicas ...*replica) error {
	for i := range texts {
		for j, r := range replicas {
			text := texts[(i+j)%len(texts)]
			if send != nil && !send(r, text) {
				continue
			}
			ev, err := w.capture(r, "/api/capture", map[string]any{"text": text}, "text", text, "")
			if err != nil {
				return err
			}
			if ev.itemID != "" {
				w.byText[text] = append(w.byText[text], filedItem{id: ev.itemID, outcome: strings.ToLower(ev.outcome), r: r})
			}
		}
	}
	return nil
}

// item returns the n-th item text was filed as with outcome.
func (w *workload) item(text, outcome string, n int) (filedItem, error) {
	for _, it := range w.byText[text] {
		if it.outcome == outcome {
			if n == 0 {
				return it, nil
			}
			n--
		}
	}
	return filedItem{}, fmt.Errorf("no %s item of %q (items %v)", outcome, text, w.byText[text])
}

// recategorize moves an item to bucket through via (another replica than
// the one that filed it), and records the correction.
func (w *workload) recategorize(it filedItem, via *replica, bucket string) error {
	var before inboxItem
	if err := call(w.ctx, "GET", via.base+"/api/inbox/"+it.id, "", &before); err != nil {
		return err
	}
	if before.AgentRun == nil {
		return fmt.Errorf("item %s has no agent run", it.id)
	}
	// A shadowed item is scored at its first recategorize once its trial
	// is kept, which happens after the phone's stream ended.
	trial := slices.IndexFunc(w.tr.shadowTrials, func(s shadowTrial) bool { return s.itemID == it.id })
	if trial >= 0 && !w.judged[it.id] {
		if err := w.waitTrialKept(it.id); err != nil {
			return err
		}
	}
	at := time.Now()
	if err := call(w.ctx, "PATCH", via.base+"/api/inbox/"+it.id+"/recategorize", `{"bucket":"`+bucket+`"}`, nil); err != nil {
		return err
	}
	if trial >= 0 && !w.judged[it.id] {
		s := w.tr.shadowTrials[trial]
		w.tr.shadowScores = append(w.tr.shadowScores, shadowScore{at: at, arm: "production", correct: s.production == bucket},
			shadowScore{at: at, arm: "candidate", correct: s.candidate == bucket})
	}
	if trial >= 0 {
		w.tr.shadowTrials[trial].label = bucket
	}
	w.tr.corrections = append(w.tr.corrections, correction{job: "brainwire", version: before.AgentRun.AgentVersion,
		agentOutcome: before.AgentRun.Outcome, agentBucket: before.AgentRun.Bucket, human: bucket, repeat: w.judged[it.id], at: at})
	w.judged[it.id] = true
	return nil
}

// waitTrialKept waits until the store holds the shadow trial of item id,
// reading it as `brainwire shadow-report` does.
func (w *workload) waitTrialKept(id string) error {
	st, err := sqlite.OpenReadOnly(w.ctx, filepath.Join(w.dataDir, "brainwire.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		it, err := st.GetInboxItem(w.ctx, "verify", id)
		if err != nil {
			return fmt.Errorf("reading item %s: %w", id, err)
		}
		if it.Shadow != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("item %s: no shadow trial kept after 10s", id)
		}
	}
}

// followUp answers a misunderstood item's question through via, with an
// Idempotency-Key unless key is empty; it returns the outcome and the
// request's body, for a repeat.
func (w *workload) followUp(it filedItem, via *replica, round int, text, key string) (string, map[string]any, error) {
	var before inboxItem
	if err := call(w.ctx, "GET", via.base+"/api/inbox/"+it.id, "", &before); err != nil {
		return "", nil, err
	}
	at := time.Now()
	body := map[string]any{"inbox_item_id": it.id, "follow_up_text": text, "follow_up_round": round}
	ev, err := w.capture(via, "/api/capture/follow-up", body, "follow_up", text, key)
	if err != nil {
		return "", nil, err
	}
	out := strings.ToLower(ev.outcome)
	f := followUp{job: "brainwire", version: before.AgentRun.AgentVersion, agentOutcome: before.AgentRun.Outcome, round: round, outcome: out, at: at}
	if isFiled(out) {
		f.bucket = ev.bucket
	}
	w.tr.followUps = append(w.tr.followUps, f)
	return out, body, nil
}

// correctRound1: people move and confirm what the agent filed, think
// twice about one item, file a misunderstood and an unresolved capture
// themselves, and answer clarifying questions over two rounds.
func (w *workload) correctRound1(a, b *replica) error {
	other := func(r *replica) *replica {
		if r == a {
			return b
		}
		return a
	}
	steps := []struct {
		text, outcome string
		n             int
		buckets       []string
	}{
		{"Call mom about her birthday on Sunday", "classified", 0, []string{"Ideas", "Admin"}},
		{"Meet Jonas to review the project roadmap", "low_confidence", 0, []string{"Projects"}},
		{"Pay the electricity bill", "classified", 0, []string{"Admin"}},
		{"Finish the quarterly report draft by Thursday", "classified", 1, []string{"People"}},
		{"asdf qwerty zxcv", "misunderstood", 0, []string{"Ideas"}},
		{"#no-tool Call the dentist", "unresolved", 0, []string{"Admin"}},
	}
	for _, st := range steps {
		it, err := w.item(st.text, st.outcome, st.n)
		if err != nil {
			if st.outcome == "unresolved" {
				continue // a store that keeps no unresolved items
			}
			return err
		}
		for _, bucket := range st.buckets {
			if err := w.recategorize(it, other(it.r), bucket); err != nil {
				return err
			}
		}
	}
	it, err := w.item("asdf qwerty zxcv", "misunderstood", 1)
	if err != nil {
		return err
	}
	if out, _, err := w.followUp(it, other(it.r), 1, "zzz qqq", ""); err != nil || out != "misunderstood" {
		return fmt.Errorf("follow-up round 1: %s, %v", out, err)
	}
	if out, _, err := w.followUp(it, it.r, 2, "I meant: call my friend Sam about his birthday", ""); err != nil || out != "classified" {
		return fmt.Errorf("follow-up round 2: %s, %v", out, err)
	}
	gym, err := w.item("Go to the gym after work", "misunderstood", 0)
	if err != nil {
		return err
	}
	_, _, err = w.followUp(gym, other(gym.r), 1, "Renew the gym membership", "")
	return err
}

// refusedTexts are captures whose calls the simulator refuses (#refuse):
// each call once with 429, which serve's retries hide from the phone; the
// first call three times with 503, which outlasts them (serve sends a
// call again twice), so that the phone gets the error.
var refusedTexts = []struct{ text, status string }{
	{"#refuse:429 Pay the water bill", "429"},
	{"#refuse:503:3 Call the plumber about the leak", "503"},
}

// refusals sends the refused captures to each replica. What the
// simulator refused (its stats, before and after each capture, one at a
// time) and what the phone saw are the truth: every refusal but one
// that ended the capture in an error was sent again. The simulator
// refuses only calls that create a response, create_response to
// brainwire.
func (w *workload) refusals(replicas ...*replica) error {
	for _, r := range replicas {
		for _, rt := range refusedTexts {
			before, err := w.simStats()
			if err != nil {
				return err
			}
			at := time.Now()
			ev, err := w.capture(r, "/api/capture", map[string]any{"text": rt.text}, "text", rt.text, "")
			if err != nil {
				return err
			}
			after, err := w.simStats()
			if err != nil {
				return err
			}
			refused := int(after.Refused[rt.status] - before.Refused[rt.status])
			shadowRefused := r.shadows(ev.runID) && ev.itemID != "" && rt.status == "429"
			if shadowRefused {
				// Production's run makes two calls (its start, the tool's
				// output), each refused once; the candidate's first call is
				// refused too, once and never sent again, some time after the
				// phone's stream ended: wait for all three, so that what is
				// left once the candidate's is taken away is production's.
				for deadline := time.Now().Add(10 * time.Second); refused < 3 && time.Now().Before(deadline); {
					time.Sleep(20 * time.Millisecond)
					if after, err = w.simStats(); err != nil {
						return err
					}
					refused = int(after.Refused[rt.status] - before.Refused[rt.status])
				}
				if refused < 3 {
					return fmt.Errorf("%s %q: refused %d times in all, want production's two calls and the shadow's", r.name, rt.text, refused)
				}
				refused--
			}
			reached := 0
			if strings.EqualFold(ev.outcome, "error") {
				reached = 1
			}
			if refused == 0 || (rt.status == "503") != (reached == 1) {
				return fmt.Errorf("%s %q: refused %d times, the phone saw %s", r.name, rt.text, refused, ev.outcome)
			}
			for range refused - reached {
				w.tr.retries = append(w.tr.retries, upstreamRetry{job: "brainwire", version: r.version, op: "create_response", status: rt.status, at: at})
				w.tr.upstream = append(w.tr.upstream, upstreamError{job: "brainwire", version: r.version, errType: rt.status, source: "http", retried: true, at: at})
			}
			if shadowRefused {
				w.tr.shadowThrottled = append(w.tr.shadowThrottled, at)
				w.tr.shadowTrials = w.tr.shadowTrials[:len(w.tr.shadowTrials)-1]
			}
			if reached == 1 {
				w.tr.upstream = append(w.tr.upstream, upstreamError{job: "brainwire", version: r.version, errType: rt.status, source: "http", at: at})
			}
			w.wantResends[ev.runID] = refused - reached
		}
	}
	return nil
}

// simStats reads the simulator's counts.
func (w *workload) simStats() (simulator.Stats, error) {
	var st simulator.Stats
	return st, call(w.ctx, "GET", w.simURL+simulator.StatsPath, "", &st)
}

// replays1: phones send captures with an Idempotency-Key to a and, their
// streams broken, send them again to b, which replays them. It returns
// the misunderstood item one of them made, for a keyed follow-up later.
func (w *workload) replays1(a, b *replica) (filedItem, error) {
	if _, err := w.keyedAndRepeated(a, b, "Renew the car insurance before Friday"); err != nil {
		return filedItem{}, err
	}
	ev, err := w.keyedAndRepeated(a, b, "zxcv asdf qwerty")
	if err != nil {
		return filedItem{}, err
	}
	if !strings.EqualFold(ev.outcome, "misunderstood") || ev.itemID == "" {
		return filedItem{}, fmt.Errorf("keyed capture %q: %s, want a misunderstood item", "zxcv asdf qwerty", ev.outcome)
	}
	return filedItem{id: ev.itemID, outcome: "misunderstood", r: a}, nil
}

// replays2 repeats keyed captures the other way round, a capture that
// ended in an error (its repeat runs afresh), and a keyed follow-up that
// answers asked's question.
func (w *workload) replays2(b, a *replica, asked filedItem) error {
	for _, text := range []string{"Renew the car insurance before Friday", "#fail Email the landlord"} {
		if _, err := w.keyedAndRepeated(b, a, text); err != nil {
			return err
		}
	}
	key := w.newKey()
	text := "I meant: call my friend Sam about his birthday"
	out, body, err := w.followUp(asked, b, 1, text, key)
	if err != nil {
		return err
	}
	if out != "classified" {
		return fmt.Errorf("keyed follow-up: %s, want classified", out)
	}
	return w.repeat(a, "/api/capture/follow-up", body, "follow_up", text, key, phoneEvents{outcome: out})
}

func (w *workload) newKey() string {
	w.keyN++
	return fmt.Sprintf("verify-%d", w.keyN)
}

// keyedAndRepeated captures text on first with a new Idempotency-Key and
// sends the same request again to second.
func (w *workload) keyedAndRepeated(first, second *replica, text string) (phoneEvents, error) {
	key := w.newKey()
	body := map[string]any{"text": text}
	ev, err := w.capture(first, "/api/capture", body, "text", text, key)
	if err != nil {
		return ev, err
	}
	return ev, w.repeat(second, "/api/capture", body, "text", text, key, ev)
}

// repeat sends a request again with its key to r: a repeat of a capture
// that filed something is replayed (the first one's outcome and run, no
// run of its own); one of a capture that ended in an error runs afresh.
func (w *workload) repeat(r *replica, path string, body map[string]any, kind, text, key string, first phoneEvents) error {
	out := strings.ToLower(first.outcome)
	if out == "error" {
		w.tr.ranAgain++
		_, err := w.capture(r, path, body, kind, text, key)
		return err
	}
	at := time.Now()
	ev, err := post(w.ctx, r.base, path, body, key)
	if err != nil {
		return fmt.Errorf("%s: repeat of %q: %w", r.name, text, err)
	}
	if !ev.replayed || !strings.EqualFold(ev.outcome, out) || (first.runID != "" && ev.runID != first.runID) {
		return fmt.Errorf("%s: repeat of %q: replayed %v, %s run %s; want the first capture's %s run %s replayed",
			r.name, text, ev.replayed, ev.outcome, ev.runID, out, first.runID)
	}
	w.tr.replays = append(w.tr.replays, replay{job: "brainwire", outcome: out, kind: kind, at: at})
	return nil
}

// correctRound2 judges captures of both versions after the restart.
func (w *workload) correctRound2(a, b *replica) error {
	// The texts' second round of items: round 1 made two of each. On
	// serve-a's, where every capture is shadowed, one arm is right and
	// the other wrong: the candidate files the gym with People, production
	// the garden party.
	for _, c := range []struct {
		text, outcome string
		n             int
		via, on       *replica // on: the replica that filed it, when it matters
		bucket        string
	}{
		{"Go to the gym after work", "classified", 0, a, nil, "People"},
		{"Pay the electricity bill", "classified", 2, b, nil, "Admin"},
		{"Call mom about her birthday on Sunday", "classified", 2, b, nil, "Projects"},
		{"Go to the gym after work", "misunderstood", 2, b, a, "People"},
		{"#long:400 Plan the garden party with my sister", "classified", 3, b, a, "People"},
	} {
		it, err := w.item(c.text, c.outcome, c.n)
		if err != nil {
			return err
		}
		if c.on != nil && it.r != c.on {
			return fmt.Errorf("%s item %d of %q is %s's, want %s's", c.outcome, c.n, c.text, it.r.name, c.on.name)
		}
		if err := w.recategorize(it, c.via, c.bucket); err != nil {
			return err
		}
	}
	asked, err := w.item("asdf qwerty zxcv", "misunderstood", 2)
	if err != nil {
		return err
	}
	_, _, err = w.followUp(asked, a, 1, "I meant: call my friend Sam about his birthday", "")
	return err
}

// evaluate runs `brainwire eval` on some lines of the test corpus, the
// errands instructions against the agent's own.
func (w *workload) evaluate(i int, lines []int, errands string) error {
	corpus, err := os.ReadFile(filepath.Join(root, "eval", "testdata", "captures.jsonl"))
	if err != nil {
		return err
	}
	all := strings.Split(strings.TrimSpace(string(corpus)), "\n")
	var sub []string
	for _, l := range lines {
		sub = append(sub, all[l])
	}
	path := filepath.Join(w.s.dir, fmt.Sprintf("corpus-%d.jsonl", i))
	if err := os.WriteFile(path, []byte(strings.Join(sub, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	report := filepath.Join(w.s.dir, fmt.Sprintf("eval-%d.json", i))
	at := time.Now()
	p, err := w.s.run(fmt.Sprintf("eval-%d", i), w.env(""), "eval", "-instructions", errands, "-baseline", "agent",
		"-json", report, path)
	if err != nil {
		return err
	}
	if err := p.Wait(2 * time.Minute); err != nil {
		return err
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return err
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("eval report: %w", err)
	}
	id, _ := rep["eval_run_id"].(string)
	if id == "" {
		return fmt.Errorf("eval report without eval_run_id: %.300s", b)
	}
	w.tr.evalRuns = append(w.tr.evalRuns, id)
	// The evaluation's captures are its runs of each case under each
	// version; the report names the run and the versions, the traces
	// every capture (the evaluation's run id is on each one's resource).
	cand, _ := rep["candidate"].(map[string]any)
	base, _ := rep["baseline"].(map[string]any)
	if cand["agent_version"] != w.tr.v2 || base["agent_version"] != w.tr.v1 {
		return fmt.Errorf("eval %s ran versions %v and %v, want %s and %s", id, base["agent_version"], cand["agent_version"], w.tr.v1, w.tr.v2)
	}
	cases, err := evalCasesOf(rep, id, len(lines), at)
	if err != nil {
		return err
	}
	w.tr.evalCases = append(w.tr.evalCases, cases...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		perVersion := map[string]int{}
		runs := map[string]phoneRun{}
		for _, sp := range w.s.traces.Spans() {
			if strings.HasPrefix(sp.Name, "invoke_agent ") && telemetrytest.Attr(sp.Resource.Values, "brainwire.eval.run_id") == id {
				v := str(telemetrytest.Attr(sp.Attributes, "gen_ai.agent.version"))
				perVersion[v]++
				runs[str(telemetrytest.Attr(sp.Attributes, "run_id"))] = phoneRun{job: "brainwire-eval", version: v, kind: "text",
					outcome: str(telemetrytest.Attr(sp.Attributes, "brainwire.capture.outcome")), at: at}
			}
		}
		if perVersion[w.tr.v1] == len(lines) && perVersion[w.tr.v2] == len(lines) && len(runs) == 2*len(lines) {
			for rid, r := range runs {
				w.phone[rid] = r
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("eval %s: runs by version %v, want %d of each of %s and %s", id, perVersion, len(lines), w.tr.v1, w.tr.v2)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// collectRuns reads every run's measurements from its trace, checking that
// the trace says what the phone (or the evaluation's report) saw.
func (w *workload) collectRuns() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans := map[string]*telemetrytest.Span{}
		for _, sp := range w.s.traces.Spans() {
			if strings.HasPrefix(sp.Name, "invoke_agent ") {
				spans[str(telemetrytest.Attr(sp.Attributes, "run_id"))] = sp
			}
		}
		missing := 0
		for id := range w.phone {
			if spans[id] == nil {
				missing++
			}
		}
		if missing == 0 {
			return w.fromSpans(spans)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d runs have no invoke_agent span", missing, len(w.phone))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (w *workload) fromSpans(spans map[string]*telemetrytest.Span) error {
	runOfTrace := map[string]*run{}
	for id, ph := range w.phone {
		sp := spans[id]
		a := func(k string) any { return telemetrytest.Attr(sp.Attributes, k) }
		r := run{
			job:       str(telemetrytest.Attr(sp.Resource.Values, "service.name")),
			instance:  str(telemetrytest.Attr(sp.Resource.Values, "service.instance.id")),
			evalRunID: str(telemetrytest.Attr(sp.Resource.Values, "brainwire.eval.run_id")),
			version:   str(a("gen_ai.agent.version")),
			kind:      str(a("brainwire.capture.kind")),
			outcome:   str(a("brainwire.capture.outcome")),
			bucket:    str(a("brainwire.capture.bucket")),
			runID:     id,
			at:        ph.at,
			traceID:   hex.EncodeToString(sp.TraceId),
			spanID:    hex.EncodeToString(sp.SpanId),
		}
		r.confidence, r.hasConfidence = a("brainwire.capture.confidence").(float64)
		r.ttoMS, _ = a("brainwire.capture.time_to_outcome_ms").(int64)
		r.chunks, _ = a("brainwire.capture.reasoning_chunks").(int64)
		r.inTokens, r.hasUsage = a("gen_ai.usage.input_tokens").(int64)
		r.outTokens, _ = a("gen_ai.usage.output_tokens").(int64)
		if r.job != ph.job || r.kind != ph.kind || r.outcome != ph.outcome || (ph.version != "" && r.version != ph.version) {
			return fmt.Errorf("run %s: the trace says %s/%s/%s/%s, the phone saw %+v", id, r.job, r.version, r.kind, r.outcome, ph)
		}
		if r.instance == "" {
			return fmt.Errorf("run %s: no service.instance.id", id)
		}
		w.tr.runs = append(w.tr.runs, r)
		runOfTrace[r.traceID] = &w.tr.runs[len(w.tr.runs)-1]
	}
	// Tool errors, as the tool spans of each run say, which must be the
	// ones the script provoked.
	got := map[string]string{}
	for _, sp := range w.s.traces.Spans() {
		if !strings.HasPrefix(sp.Name, "execute_tool ") {
			continue
		}
		et := str(telemetrytest.Attr(sp.Attributes, "error.type"))
		r := runOfTrace[hex.EncodeToString(sp.TraceId)]
		if et == "" || r == nil {
			continue
		}
		got[r.runID] = et
		w.tr.toolErrors = append(w.tr.toolErrors, toolError{job: r.job, version: r.version,
			tool: str(telemetrytest.Attr(sp.Attributes, "gen_ai.tool.name")), errType: et, at: r.at})
	}
	for id, want := range w.wantToolErrors {
		if got[id] != want {
			return fmt.Errorf("run %s: tool error %q, want %q", id, got[id], want)
		}
	}
	if len(got) != len(w.wantToolErrors) {
		return fmt.Errorf("tool errors in %d runs, want %d", len(got), len(w.wantToolErrors))
	}
	// Every attempt sent again has its own client span, with
	// http.request.resend_count: those of each refused run must be the
	// retries the simulator's refusals and the phone say, and no other run
	// has any.
	resends := map[string]int{}
	for _, sp := range w.s.traces.Spans() {
		r := runOfTrace[hex.EncodeToString(sp.TraceId)]
		if r == nil || telemetrytest.Attr(sp.Attributes, "http.request.resend_count") == nil {
			continue
		}
		if sp.Name != "create_response" {
			return fmt.Errorf("run %s: %s sent again; the simulator refuses only create_response", r.runID, sp.Name)
		}
		resends[r.runID]++
	}
	maps.DeleteFunc(w.wantResends, func(_ string, n int) bool { return n == 0 })
	if !maps.Equal(resends, w.wantResends) {
		return fmt.Errorf("attempts sent again by run %v, want %v", resends, w.wantResends)
	}
	for _, r := range w.tr.runs {
		if w.wantUpstream[r.runID] {
			w.tr.upstream = append(w.tr.upstream, upstreamError{job: r.job, version: r.version, errType: "server_error", source: "run", at: r.at})
		}
	}
	return nil
}

// covers checks that the workload exercised what the dashboard shows, so
// that a panel's test cannot pass on zeros.
func (w *workload) covers() error {
	seen := map[string]bool{}
	for _, r := range w.tr.runs {
		seen[r.job+" "+r.version+" "+r.outcome] = true
		seen[r.job+" "+r.kind] = true
	}
	var missing []string
	for _, v := range []string{w.tr.v1, w.tr.v2} {
		for _, o := range []string{"classified", "low_confidence", "misunderstood", "unresolved", "error"} {
			if !seen["brainwire "+v+" "+o] {
				missing = append(missing, "brainwire "+v+" "+o)
			}
		}
		if !seen["brainwire-eval "+v+" classified"] {
			missing = append(missing, "brainwire-eval "+v+" classified")
		}
	}
	if !seen["brainwire follow_up"] {
		missing = append(missing, "follow-up captures")
	}
	labels := map[string]bool{}
	for _, c := range w.tr.corrections {
		labels[fmt.Sprintf("%s %v", c.label(), c.repeat)] = true
	}
	for _, l := range []string{"correct false", "incorrect false", "incorrect true"} {
		if !labels[l] {
			missing = append(missing, "a correction "+l)
		}
	}
	if len(w.tr.toolErrors) == 0 || len(w.tr.upstream) == 0 || len(w.tr.followUps) < 3 {
		missing = append(missing, "tool errors, upstream errors and follow-ups")
	}
	for _, rt := range w.tr.retries {
		seen["retry "+rt.version+" "+rt.status] = true
	}
	for _, e := range w.tr.upstream {
		seen[fmt.Sprintf("upstream %s %s %v", e.source, e.errType, e.retried)] = true
	}
	for _, r := range w.tr.replays {
		seen["replay "+r.kind] = true
	}
	for _, want := range []string{"retry " + w.tr.v1 + " 429", "retry " + w.tr.v1 + " 503", "retry " + w.tr.v2 + " 429", "retry " + w.tr.v2 + " 503",
		"upstream http 503 true", "upstream http 503 false", "upstream http 429 true", "upstream run server_error false",
		"replay text", "replay follow_up"} {
		if !seen[want] {
			missing = append(missing, want)
		}
	}
	if w.tr.ranAgain == 0 {
		missing = append(missing, "a repeat of a capture that ended in an error")
	}
	for _, s := range w.tr.shadowTrials {
		seen[fmt.Sprintf("trial agree %v", s.agree())] = true
	}
	for _, s := range w.tr.shadowScores {
		seen[fmt.Sprintf("score %s %v", s.arm, s.correct)] = true
	}
	for _, want := range []string{"trial agree true", "trial agree false", "score production true", "score production false", "score candidate true", "score candidate false"} {
		if !seen[want] {
			missing = append(missing, "shadow "+want)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the workload does not cover %v", missing)
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
