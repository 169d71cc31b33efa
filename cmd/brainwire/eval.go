package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/wiring"
)

const evalAbout = `
Runs every capture of a labelled corpus (JSON Lines, as export-labels writes)
through the capture path against the configured agent, with the instructions of
-instructions when given, into a scratch store, and reports accuracy; with
-baseline it compares two sets of instructions case by case. docs/tuning.md
says how.`

// envEval is eval's environment note: serve's, and its service name.
const envEval = envAgent + "\nIts telemetry's service name is brainwire-eval unless OTEL_SERVICE_NAME is set."

// Exit status of an evaluation below --min-accuracy.
const exitBelowMinAccuracy = 3

type evalFlags struct {
	instructions, baseline string
	minAccuracy            float64
	confidenceDrop         float64
	trials                 int
	concurrency            int
	format                 string
	markdown, json, html   string
	traceURL               string
	simDelay               time.Duration
	sim                    simulator.Variation
}

// maxTrials bounds -trials, and maxRuns the runs of a side (cases times
// trials), whose results the report holds in memory.
const (
	maxTrials = 100
	maxRuns   = 100_000
)

func evalCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var f evalFlags
	fs := newCommand("eval", "eval [flags] CORPUS.jsonl", evalAbout, envEval)
	fs.StringVar(&f.instructions, "instructions", "", "run with the instructions in this `file` instead of the agent's")
	fs.StringVar(&f.baseline, "baseline", "", "also run with the instructions in this `file` (or \"agent\" for the agent's own) and compare case by case")
	fs.Float64Var(&f.minAccuracy, "min-accuracy", 0, "exit with status 3 when the accuracy is below this (0 to 1)")
	fs.Float64Var(&f.confidenceDrop, "confidence-drop", eval.DefaultConfidenceDrop, "list a right case as a regression when its confidence in the same bucket falls by this much (0 to 1)")
	fs.IntVar(&f.trials, "trials", 1, "run each case this many times on each side")
	fs.IntVar(&f.concurrency, "concurrency", eval.DefaultConcurrency, "captures in flight at once")
	fs.StringVar(&f.format, "format", eval.FormatTable, "report on stdout as table, markdown, json or html")
	fs.StringVar(&f.markdown, "markdown", "", "also write the report as Markdown to this `file`")
	fs.StringVar(&f.json, "json", "", "also write the report as JSON to this `file`")
	fs.StringVar(&f.html, "html", "", "also write the report as one self-contained HTML page to this `file`")
	fs.StringVar(&f.traceURL, "trace-url", "", "link each run to its trace: this URL `template` with {trace_id} replaced")
	fs.DurationVar(&f.simDelay, "sim-chunk-delay", 0, "the simulator's pause between reasoning chunks (0: none)")
	fs.Int64Var(&f.sim.Seed, "sim-seed", 1, "the seed of the simulator's variation")
	fs.Float64Var(&f.sim.ConfidenceNoise, "sim-confidence-noise", 0, "vary the simulator's confidences by normal noise of this standard deviation")
	fs.Float64Var(&f.sim.OtherBucket, "sim-other-bucket", 0, "the chance that the simulator files a capture in another bucket (0 to 1)")
	if err := fs.parse(args, stdout, stderr); err != nil {
		return err
	}
	corpusPath := fs.Arg(0)
	switch {
	case fs.NArg() == 0:
		return fs.fail(stderr, "a corpus file is required")
	case fs.NArg() > 1:
		return fs.fail(stderr, "one corpus file, after the flags, not %q", fs.Args())
	case f.simDelay < 0:
		return usageError{"eval: -sim-chunk-delay must not be negative"}
	case f.minAccuracy < 0 || f.minAccuracy > 1:
		return usageError{"eval: -min-accuracy must be 0 to 1"}
	case f.concurrency < 1 || f.concurrency > 64:
		return usageError{"eval: -concurrency must be 1 to 64"}
	case f.trials < 1 || f.trials > maxTrials:
		return usageError{fmt.Sprintf("eval: -trials must be 1 to %d", maxTrials)}
	case f.confidenceDrop <= 0 || f.confidenceDrop > 1:
		return usageError{"eval: -confidence-drop must be above 0 and at most 1"}
	case !slices.Contains([]string{eval.FormatTable, eval.FormatMarkdown, eval.FormatJSON, eval.FormatHTML}, f.format):
		return usageError{fmt.Sprintf("eval: unknown -format %q (table, markdown, json, html)", f.format)}
	case f.traceURL != "" && !strings.Contains(f.traceURL, eval.TraceIDPlaceholder):
		return usageError{"eval: -trace-url must contain " + eval.TraceIDPlaceholder}
	case f.sim.ConfidenceNoise < 0 || f.sim.ConfidenceNoise > 1:
		return usageError{"eval: -sim-confidence-noise must be 0 to 1"}
	case f.sim.OtherBucket < 0 || f.sim.OtherBucket > 1:
		return usageError{"eval: -sim-other-bucket must be 0 to 1"}
	}
	// A capture's INFO lines would bury the report.
	log, err := newLogger(getenv, stderr, slog.LevelWarn)
	if err != nil {
		return err
	}
	cases, err := readCorpus(corpusPath)
	if err != nil {
		return err
	}
	if len(cases)*f.trials > maxRuns {
		return usageError{fmt.Sprintf("eval: %s × %s is over %d runs a side", counted(len(cases), "case"), counted(f.trials, "trial"), maxRuns)}
	}
	candidate, err := readInstructions(f.instructions)
	if err != nil {
		return err
	}
	var baseline string
	if f.baseline != "" && f.baseline != "agent" {
		if baseline, err = readInstructions(f.baseline); err != nil {
			return err
		}
	}

	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	if f.sim.On() && cfg.Agent.Sim == "" {
		return usageError{"eval: the -sim-* flags vary the built-in simulator, and an agent service is configured"}
	}
	cfg.Sim = simulator.Config{ChunkDelay: simDelay(f.simDelay), Variation: f.sim}
	runID := newEvalRunID()
	tel, err := setupTelemetry(ctx, cfg, evalEnv(getenv), io.Discard, log, evalResource(runID)...)
	if err != nil {
		return err
	}
	defer tel.shutdown()
	b := &backends{}
	defer b.close()
	scratch, err := os.MkdirTemp("", "brainwire-eval-")
	if err != nil {
		return fmt.Errorf("eval: scratch directory: %w", err)
	}
	defer os.RemoveAll(scratch)
	open := evalTarget(cfg, b, tel, scratch, runID, log)

	sides := []eval.Side{{Label: instructionsLabel(f.instructions), Instructions: candidate}}
	if f.baseline != "" {
		sides = append([]eval.Side{{Label: instructionsLabel(f.baseline), Instructions: baseline}}, sides...)
	}
	progress := newProgress(stderr, sides, len(cases), f.trials)
	passes, err := eval.Run(ctx, eval.Config{Cases: cases, RunID: runID, Trials: f.trials, Concurrency: f.concurrency, Progress: progress.update,
		Observer: tel.tel},
		open, sides...)
	progress.finish()
	if err != nil {
		return err
	}
	cand, base := passes[len(passes)-1], (*eval.Pass)(nil)
	if len(passes) == 2 {
		base = passes[0]
	}
	rep := eval.NewReport(eval.ReportConfig{RunID: runID, Corpus: corpusPath, MinAccuracy: f.minAccuracy,
		ConfidenceDrop: f.confidenceDrop, TraceURL: f.traceURL}, cand, base)
	if err := rep.Write(stdout, f.format); err != nil {
		return err
	}
	for path, format := range map[string]string{f.markdown: eval.FormatMarkdown, f.json: eval.FormatJSON, f.html: eval.FormatHTML} {
		if path != "" {
			if err := writeReport(path, rep, format); err != nil {
				return err
			}
		}
	}
	if !rep.Passed {
		return exitCode{code: exitBelowMinAccuracy, msg: fmt.Sprintf("eval: accuracy %.3f is below -min-accuracy %.3f",
			rep.Candidate.Metrics.Accuracy, f.minAccuracy)}
	}
	return nil
}

// evalTarget opens each pass's capture server with wiring.New, as serve does,
// but with a scratch SQLite store of its own: an evaluation never files
// into the configured store. Offline, each pass also gets a simulator of
// its own, its variation seeded apart from the other's: the passes run
// interleaved, and a seed still reproduces each side's answers.
func evalTarget(cfg config, b *backends, tel *telemetrySetup, scratch, runID string, log *slog.Logger) eval.Open {
	var mu sync.Mutex
	n := 0
	cred := newCredential()
	return func(ctx context.Context, instructions string, obs brainwire.Observer) (eval.Target, error) {
		mu.Lock()
		n++
		pass := n
		mu.Unlock()
		passCfg, passLog := cfg, log
		passCfg.Sim.Variation.Seed += int64(pass - 1)
		if pass > 1 {
			passLog = slog.New(slog.DiscardHandler) // the first pass said which agent runs
		}
		agent, err := openAgent(ctx, passCfg, cred, b, passLog)
		if err != nil {
			return eval.Target{}, err
		}
		store, err := sqlite.Open(ctx, filepath.Join(scratch, fmt.Sprintf("pass-%d.db", pass)))
		if err != nil {
			return eval.Target{}, err
		}
		key := "eval-" + runID + "-key"
		srv, err := wiring.New(wiring.Config{
			Server: server.Config{
				Keys:         server.Keys{key: "eval"},
				Store:        store,
				Observer:     obs,
				Logger:       log,
				AgentName:    agentName,
				RunTimeout:   cfg.Server.RunTimeout,
				KeepAlive:    -1,
				Instructions: instructions,
				EvalRunID:    runID,
			},
			Agent:     agent,
			Retry:     retry.Policy{Retries: cfg.Retries},
			Telemetry: tel.tel,
		})
		if err != nil {
			store.Close()
			return eval.Target{}, err
		}
		agentInfo, err := srv.RefreshAgent(ctx)
		if err != nil {
			store.Close()
			return eval.Target{}, fmt.Errorf("eval: the agent service does not describe the agent: %w", err)
		}
		return eval.Target{Captures: srv.Capture(), UserID: "eval", Agent: agentInfo, Close: func() { store.Close() }}, nil
	}
}

func readCorpus(path string) ([]eval.Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	cases, err := eval.ReadCorpus(f)
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	return cases, nil
}

// maxInstructionsBytes bounds an instructions file (the service takes at
// most 256,000 characters).
const maxInstructionsBytes = 256_000

func readInstructions(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("eval: instructions: %w", err)
	}
	if len(b) > maxInstructionsBytes {
		return "", fmt.Errorf("eval: instructions %s: over %d bytes", path, maxInstructionsBytes)
	}
	// Sent as written, so that the version eval reports is the one the
	// agent will have once these instructions are deployed.
	if strings.TrimSpace(string(b)) == "" {
		return "", fmt.Errorf("eval: instructions %s: the file is empty", path)
	}
	return string(b), nil
}

func instructionsLabel(path string) string {
	if path == "" || path == "agent" {
		return "agent"
	}
	return filepath.Base(path)
}

func writeReport(path string, rep *eval.Report, format string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("eval: report: %w", err)
	}
	if err := rep.Write(f, format); err != nil {
		f.Close()
		return fmt.Errorf("eval: report %s: %w", path, err)
	}
	return f.Close()
}

// evalEnv is the environment telemetry reads during an evaluation: its
// signals go where serve's go, under their own service name unless one
// is set, so that dashboards can tell them from production.
func evalEnv(getenv func(string) string) func(string) string {
	return func(k string) string {
		if k == "OTEL_SERVICE_NAME" && getenv(k) == "" {
			return "brainwire-eval"
		}
		return getenv(k)
	}
}

func newEvalRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "eval-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b)
}

// progress draws a bar on a terminal, and a line every tenth of the way
// elsewhere (CI logs).
type progress struct {
	w     io.Writer
	tty   bool
	label string
	began time.Time
	mu    sync.Mutex
	last  int // tenths reported
}

func newProgress(w io.Writer, sides []eval.Side, cases, trials int) *progress {
	labels := make([]string, len(sides))
	for i, s := range sides {
		labels[i] = s.Label
	}
	p := &progress{w: w, label: strings.Join(labels, " vs "), began: time.Now()}
	if f, ok := w.(*os.File); ok {
		fi, err := f.Stat()
		p.tty = err == nil && fi.Mode()&os.ModeCharDevice != 0
	}
	if !p.tty {
		what := counted(cases, "case")
		if trials > 1 {
			what += fmt.Sprintf(" × %d trials", trials)
		}
		fmt.Fprintf(w, "eval: %s with %s instructions\n", what, strings.Join(labels, " and "))
	}
	return p
}

func (p *progress) update(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		const width = 30
		filled := width * done / total
		fmt.Fprintf(p.w, "\r%-12s [%s%s] %d/%d %5.1fs", p.label, strings.Repeat("#", filled), strings.Repeat(".", width-filled),
			done, total, time.Since(p.began).Seconds())
		return
	}
	if tenth := 10 * done / total; tenth > p.last {
		p.last = tenth
		fmt.Fprintf(p.w, "eval: %s: %d/%d (%.1fs)\n", p.label, done, total, time.Since(p.began).Seconds())
	}
}

func (p *progress) finish() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
