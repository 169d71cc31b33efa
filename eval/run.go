package eval

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/brainwire/brainwire"
)

// DefaultConcurrency is how many cases run at once.
const DefaultConcurrency = 4

// Target is what an evaluation runs its captures on: the capture service
// wired as serve wires it (the caller uses the one composition function),
// with a scratch store, its agent running the instructions under test.
type Target struct {
	Captures Capturer
	// UserID is whose captures they are.
	UserID string
	// Agent is the agent the server runs, instructions applied.
	Agent brainwire.AgentInfo
	// Close releases the target (its scratch store); nil: nothing.
	Close func()
}

// Capturer runs a capture to its end: a capture.Service.
type Capturer interface {
	Capture(ctx context.Context, c brainwire.Capture) (brainwire.CaptureResult, error)
}

// Open opens a Target running instructions ("" keeps the agent's), whose
// every capture obs watches.
type Open func(ctx context.Context, instructions string, obs brainwire.Observer) (Target, error)

// Config is one evaluation's.
type Config struct {
	Cases []Case
	// RunID names the evaluation; every capture's run id starts with it.
	RunID string
	// Trials is how many times each case runs on each side (1 when 0).
	Trials int
	// Concurrency bounds the captures in flight (DefaultConcurrency when 0).
	Concurrency int
	// Progress, if set, is told each time a capture is done.
	Progress func(done, total int)
	// Observer, if set, is told of each case run once its outcome is
	// known.
	Observer CaseObserver
}

// CaseObserver is told of each run of a case, once its outcome is known:
// the agent version of its pass, the evaluation's run id and whether it
// was right (Result.Correct, as the report counts it). Telemetry counts
// them, so that a dashboard can tell evaluations apart.
type CaseObserver interface {
	EvalCaseRun(ctx context.Context, version, evalRunID string, correct bool)
}

func (c Config) trials() int { return max(1, c.Trials) }

// Side is one set of instructions to run the corpus with.
type Side struct {
	// Label names where the instructions came from (a file, or "agent"
	// for the agent's own); run ids carry it.
	Label string
	// Instructions are sent with every run; "" keeps the agent's.
	Instructions string
}

// Result is what became of one run of a case.
type Result struct {
	Case Case `json:"case"`
	Trial
}

// Trial is one run of a case: what the agent did, and where its run is.
type Trial struct {
	// N numbers the case's trials from 1.
	N        int               `json:"trial"`
	Outcome  brainwire.Outcome `json:"outcome"`
	Bucket   string            `json:"bucket,omitempty"`
	Conf     float64           `json:"confidence"`
	Correct  bool              `json:"correct"`
	Question string            `json:"question,omitempty"`
	// RunID is the capture's run id: its trace's run_id.
	RunID string `json:"run_id"`
	// TraceID is the trace telemetry recorded the run in ("" when
	// telemetry is off); TraceURL opens it, when the report has a
	// template.
	TraceID      string `json:"trace_id,omitempty"`
	TraceURL     string `json:"trace_url,omitempty"`
	ErrorMessage string `json:"error,omitempty"`
	// Reasoning is an excerpt of the run's chain-of-thought up to the
	// outcome: its beginning and its end, at most ExcerptBytes.
	Reasoning       string        `json:"reasoning,omitempty"`
	ReasoningChunks int           `json:"reasoning_chunks"`
	ReasoningBytes  int           `json:"reasoning_bytes"`
	InputTokens     int64         `json:"input_tokens"`
	OutputTokens    int64         `json:"output_tokens"`
	TimeToOutcome   time.Duration `json:"time_to_outcome_ns"`
}

// Pass is the corpus run with one set of instructions, every case
// Config.Trials times.
type Pass struct {
	// Instructions names where the instructions came from (a file, or
	// "agent" for the agent's own).
	Instructions string              `json:"instructions"`
	Agent        brainwire.AgentInfo `json:"-"`
	// Results are by case in corpus order, then by trial.
	Results []Result `json:"-"`
	// Elapsed is how long the evaluation took: passes run together.
	Elapsed time.Duration `json:"-"`
}

// job is one capture to run: a trial of a case on a side.
type job struct {
	side, cas, trial int
}

// Run runs every case cfg.Trials times on each side, at most
// cfg.Concurrency captures at a time, and returns a pass per side. The
// sides run together, their captures interleaved case by case, so that
// what changes over the evaluation's time (a service's load, warm
// connections) weighs on each alike. A case whose capture could not be
// run at all (the service refused it) fails the evaluation; a capture
// that ends in ERROR is a result like any other.
func Run(ctx context.Context, cfg Config, open Open, sides ...Side) ([]*Pass, error) {
	trials := cfg.trials()
	type sideRun struct {
		target Target
		obs    *collector
		label  string // in run ids
		pass   *Pass
	}
	runs := make([]*sideRun, len(sides))
	labels := map[string]bool{}
	for i, s := range sides {
		obs := newCollector()
		target, err := open(ctx, s.Instructions, obs)
		if err != nil {
			return nil, err
		}
		if target.Close != nil {
			defer target.Close()
		}
		label := s.Label
		if labels[label] { // the same instructions twice: runs apart
			label = fmt.Sprintf("%s-%d", label, i+1)
		}
		labels[label] = true
		runs[i] = &sideRun{target: target, obs: obs, label: label,
			pass: &Pass{Instructions: s.Label, Agent: target.Agent, Results: make([]Result, len(cfg.Cases)*trials)}}
	}
	// Trial after trial through the corpus, each case on every side, the
	// side that goes first changing from case to case and trial to
	// trial.
	var jobs []job
	for t := range trials {
		for c := range cfg.Cases {
			for k := range sides {
				jobs = append(jobs, job{side: (k + c + t) % len(sides), cas: c, trial: t})
			}
		}
	}

	n := cfg.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	start := time.Now()
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for j, jb := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			sr, c := runs[jb.side], cfg.Cases[jb.cas]
			runID := fmt.Sprintf("%s-%s-%d", cfg.RunID, sr.label, jb.cas+1)
			if trials > 1 {
				runID += fmt.Sprintf("-t%d", jb.trial+1)
			}
			capture := brainwire.Capture{Kind: brainwire.KindText, UserID: sr.target.UserID,
				ThreadID: "thread-" + uuid.NewString(), RunID: runID, Text: c.Text}
			if _, err := sr.target.Captures.Capture(ctx, capture); err != nil {
				errs[j] = fmt.Errorf("case %s: %w", c.ID, err)
				cancel()
				return
			}
			res, err := sr.obs.result(c, runID)
			if err != nil {
				errs[j] = fmt.Errorf("case %s: %w", c.ID, err)
				cancel()
				return
			}
			res.N = jb.trial + 1
			sr.pass.Results[jb.cas*trials+jb.trial] = res
			if cfg.Observer != nil {
				cfg.Observer.EvalCaseRun(ctx, sr.pass.Agent.Version, cfg.RunID, res.Correct)
			}
			mu.Lock()
			done++
			if cfg.Progress != nil {
				cfg.Progress(done, len(jobs))
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("evaluation stopped: %w", err)
	}
	passes := make([]*Pass, len(runs))
	for i, sr := range runs {
		sr.pass.Elapsed = time.Since(start)
		passes[i] = sr.pass
	}
	return passes, nil
}

// collector keeps what each capture's result and reasoning were, by the
// capture's run id.
type collector struct {
	mu   sync.Mutex
	runs map[string]*runRecord
}

type runRecord struct {
	res   brainwire.CaptureResult
	trace brainwire.TraceRef
	bytes int
	// reasoning is the chain-of-thought up to the outcome, not the
	// agent's closing words.
	reasoning excerpt
}

func newCollector() *collector { return &collector{runs: map[string]*runRecord{}} }

// StartCapture implements brainwire.Observer. Telemetry's observer, when
// there is one, has started the run's trace before.
func (o *collector) StartCapture(ctx context.Context, c brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	r := &runRecord{}
	r.trace, _ = brainwire.RunTraceFrom(ctx)
	o.mu.Lock()
	o.runs[c.RunID] = r
	o.mu.Unlock()
	return ctx, &runObserver{o: o, r: r}
}

type runObserver struct {
	o *collector
	r *runRecord
}

func (ro *runObserver) ProviderEvent(brainwire.AgentEvent) {}

func (ro *runObserver) CaptureEvent(ev brainwire.CaptureEvent) {
	if ev.Type == brainwire.CaptureReasoning {
		ro.o.mu.Lock()
		ro.r.bytes += len(ev.Chunk.Text)
		if !ev.Chunk.AfterOutcome {
			ro.r.reasoning.add(ev.Chunk.Text)
		}
		ro.o.mu.Unlock()
	}
}

func (ro *runObserver) End(res brainwire.CaptureResult) {
	ro.o.mu.Lock()
	ro.r.res = res
	ro.o.mu.Unlock()
}

// result is the case's result, once its capture has ended.
func (o *collector) result(c Case, runID string) (Result, error) {
	o.mu.Lock()
	r := o.runs[runID]
	o.mu.Unlock()
	out := Result{Case: c, Trial: Trial{RunID: runID}}
	if r == nil {
		return out, errors.New("no capture ran with its run id")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.runs, runID)
	res := r.res
	out.Outcome, out.Question, out.ErrorMessage = res.Outcome, res.Question, res.ErrorMessage
	if res.HasConfidence() {
		out.Bucket, out.Conf = res.Bucket, res.Confidence
	}
	out.Correct = c.Correct(out.Outcome, out.Bucket)
	out.TraceID = r.trace.TraceID
	out.ReasoningChunks, out.ReasoningBytes, out.Reasoning = res.ReasoningChunks, r.bytes, r.reasoning.String()
	out.InputTokens, out.OutputTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	out.TimeToOutcome = res.TimeToOutcome
	return out, nil
}

// ExcerptBytes bounds the reasoning kept of each run: its first and last
// ExcerptBytes/2 bytes, where a model usually says what it read and
// what it decided.
const ExcerptBytes = 600

// excerpt keeps the beginning and the end of a text that arrives in
// chunks, in bounded memory.
type excerpt struct {
	head, tail []byte
	total      int
}

func (e *excerpt) add(s string) {
	e.total += len(s)
	if room := ExcerptBytes/2 - len(e.head); room > 0 {
		n := min(room, len(s))
		e.head, s = append(e.head, s[:n]...), s[n:]
	}
	e.tail = append(e.tail, s...)
	if len(e.tail) > ExcerptBytes { // trimmed now and then, not at every chunk
		e.tail = append(e.tail[:0], e.tail[len(e.tail)-ExcerptBytes/2:]...)
	}
}

// String is the excerpt, " … " marking what was left out; never half a
// character.
func (e *excerpt) String() string {
	tail := e.tail[max(0, len(e.tail)-ExcerptBytes/2):]
	if len(e.head)+len(tail) == e.total {
		return string(e.head) + string(tail)
	}
	head := e.head
	for len(head) > 0 && !utf8.Valid(head) {
		head = head[:len(head)-1]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return string(head) + " … " + string(tail)
}
