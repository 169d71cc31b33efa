package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/eval"
	"github.com/brainwire/brainwire/internal/app"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/sqlite"
)

const evalUsage = `usage: brainwire eval [flags] CORPUS.jsonl

Runs every capture of a labelled corpus through the real capture path
against the configured agent (the built-in simulator when
AZURE_AI_PROJECT_ENDPOINT is unset), filing into a scratch store that is
thrown away, never the production store, and reports accuracy, precision
and recall per bucket, the confusion matrix, outcome rates, reasoning
length, tokens and time to outcome.

  -instructions FILE   run with these instructions instead of the agent's
  -baseline FILE       also run with these ("agent": the agent's own) and
                       list the cases whose answer changed
  -min-accuracy X      exit with status 3 when the accuracy is below X

The corpus is JSON Lines: {"text", "expected_bucket", "expected_outcome"?,
"id"?, "meta"?}; brainwire export-labels writes one from the store.
Telemetry is configured as for serve (service name brainwire-eval unless
OTEL_SERVICE_NAME is set); every capture's trace carries the evaluation's
id (brainwire.eval.run_id) and the instructions version.

flags:
`

// exitCode is an error that sets the process's exit status.
type exitCode struct {
	code int
	msg  string
}

func (e exitCode) Error() string { return e.msg }

// Exit status of an evaluation below --min-accuracy.
const exitBelowMinAccuracy = 3

type evalFlags struct {
	instructions, baseline string
	minAccuracy            float64
	concurrency            int
	format                 string
	markdown, json         string
	simDelay               time.Duration
}

func evalCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, log *slog.Logger) error {
	log = slog.New(quiet{log.Handler(), slog.LevelWarn})
	var f evalFlags
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, evalUsage); fs.PrintDefaults() }
	fs.StringVar(&f.instructions, "instructions", "", "run with the instructions in this `file` instead of the agent's")
	fs.StringVar(&f.baseline, "baseline", "", "also run with the instructions in this `file` (or \"agent\" for the agent's own) and compare case by case")
	fs.Float64Var(&f.minAccuracy, "min-accuracy", 0, "exit with status 3 when the accuracy is below this (0 to 1)")
	fs.IntVar(&f.concurrency, "concurrency", eval.DefaultConcurrency, "captures in flight at once")
	fs.StringVar(&f.format, "format", eval.FormatTable, "report on stdout as table, markdown or json")
	fs.StringVar(&f.markdown, "markdown", "", "also write the report as Markdown to this `file`")
	fs.StringVar(&f.json, "json", "", "also write the report as JSON to this `file`")
	fs.DurationVar(&f.simDelay, "sim-chunk-delay", -1, "the simulator's pause between reasoning chunks (default none)")
	corpusPath, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case corpusPath == "":
		fs.Usage()
		return usageError{"eval: a corpus file is required"}
	case f.minAccuracy < 0 || f.minAccuracy > 1:
		return usageError{"eval: -min-accuracy must be 0 to 1"}
	case f.concurrency < 1 || f.concurrency > 64:
		return usageError{"eval: -concurrency must be 1 to 64"}
	case f.format != eval.FormatTable && f.format != eval.FormatMarkdown && f.format != eval.FormatJSON:
		return usageError{fmt.Sprintf("eval: unknown -format %q (table, markdown, json)", f.format)}
	}
	cases, err := readCorpus(corpusPath)
	if err != nil {
		return err
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
	cfg.SimChunkDelay = f.simDelay
	if cfg.SimChunkDelay == 0 {
		cfg.SimChunkDelay = -1 // the simulator's "no pause"
	}
	runID := newEvalRunID()
	tel, err := setupTelemetry(ctx, cfg, evalEnv(getenv), io.Discard, log, evalResource(runID)...)
	if err != nil {
		return err
	}
	defer tel.shutdown()
	b := &backends{}
	defer b.close()
	var cred credential
	if b.agent, err = openAgent(ctx, cfg, &cred, b, log); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "brainwire-eval-")
	if err != nil {
		return fmt.Errorf("eval: scratch directory: %w", err)
	}
	defer os.RemoveAll(scratch)
	open := evalTarget(cfg, b, tel, scratch, runID, log)

	progress := newProgress(stderr, len(cases))
	run := func(label, instructions string) (*eval.Pass, error) {
		progress.start(label)
		p, err := eval.Run(ctx, eval.Config{Cases: cases, RunID: runID, Concurrency: f.concurrency, Progress: progress.update},
			open, label, instructions)
		progress.finish()
		return p, err
	}
	var base *eval.Pass
	if f.baseline != "" {
		if base, err = run(instructionsLabel(f.baseline), baseline); err != nil {
			return err
		}
	}
	cand, err := run(instructionsLabel(f.instructions), candidate)
	if err != nil {
		return err
	}
	rep := eval.NewReport(runID, corpusPath, cand, base, f.minAccuracy)
	if err := rep.Write(stdout, f.format); err != nil {
		return err
	}
	for path, format := range map[string]string{f.markdown: eval.FormatMarkdown, f.json: eval.FormatJSON} {
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

// evalTarget opens each pass's capture server with app.New, as serve does,
// but with a scratch SQLite store of its own: an evaluation never files
// into the configured store.
func evalTarget(cfg config, b *backends, tel *telemetrySetup, scratch, runID string, log *slog.Logger) eval.Open {
	var mu sync.Mutex
	n := 0
	return func(ctx context.Context, instructions string, obs brainwire.Observer) (eval.Target, error) {
		mu.Lock()
		n++
		path := filepath.Join(scratch, fmt.Sprintf("pass-%d.db", n))
		mu.Unlock()
		store, err := sqlite.Open(ctx, path)
		if err != nil {
			return eval.Target{}, err
		}
		key := "eval-" + runID + "-key"
		srv, err := app.New(app.Config{
			Keys:         server.Keys{key: "eval"},
			Agent:        b.agent,
			Store:        store,
			Telemetry:    tel.tel,
			Observer:     obs,
			Logger:       log,
			AgentName:    agentName,
			RunTimeout:   cfg.RunTimeout,
			KeepAlive:    -1,
			Instructions: instructions,
			EvalRunID:    runID,
		})
		if err != nil {
			store.Close()
			return eval.Target{}, err
		}
		agent, err := srv.RefreshAgent(ctx)
		if err != nil {
			store.Close()
			return eval.Target{}, fmt.Errorf("eval: the agent service does not describe the agent: %w", err)
		}
		return eval.Target{Handler: srv.Handler(), APIKey: key, Agent: agent, Close: func() { store.Close() }}, nil
	}
}

// parseInterleaved parses flags that may come before or after the one
// positional argument, and returns it ("" when none).
func parseInterleaved(fs *flag.FlagSet, args []string) (string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch len(positional) {
	case 0:
		return "", nil
	case 1:
		return positional[0], nil
	}
	return "", usageError{fmt.Sprintf("%s: one corpus file, not %q", fs.Name(), positional)}
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
	total int
	label string
	began time.Time
	last  int // tenths reported
	mu    sync.Mutex
}

func newProgress(w io.Writer, total int) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, total: total}
}

func (p *progress) start(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.began, p.last = label, time.Now(), 0
	if !p.tty {
		fmt.Fprintf(p.w, "eval: %d cases with %s instructions\n", p.total, label)
	}
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
