package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
)

// DefaultConcurrency is how many cases run at once.
const DefaultConcurrency = 4

// Target is a capture server to evaluate: wired as serve wires it (the
// caller uses the one composition function), with a scratch store, its
// agent running the instructions under test.
type Target struct {
	Handler http.Handler
	APIKey  string
	// Agent is the agent the server runs, instructions applied.
	Agent brainwire.AgentInfo
	// Close releases the target (its scratch store); nil: nothing.
	Close func()
}

// Open opens a Target running instructions ("" keeps the agent's), whose
// every capture obs watches.
type Open func(ctx context.Context, instructions string, obs brainwire.Observer) (Target, error)

// Config is one evaluation's.
type Config struct {
	Cases []Case
	// RunID names the evaluation; every capture's run id starts with it.
	RunID string
	// Concurrency bounds the cases in flight (DefaultConcurrency when 0).
	Concurrency int
	// Progress, if set, is told each time a case is done.
	Progress func(done, total int)
}

// Result is what became of one case.
type Result struct {
	Case     Case              `json:"case"`
	Outcome  brainwire.Outcome `json:"outcome"`
	Bucket   string            `json:"bucket,omitempty"`
	Conf     float64           `json:"confidence"`
	Correct  bool              `json:"correct"`
	Question string            `json:"question,omitempty"`
	// RunID is the capture's run id: its trace's run_id.
	RunID           string        `json:"run_id"`
	ErrorMessage    string        `json:"error,omitempty"`
	ReasoningChunks int           `json:"reasoning_chunks"`
	ReasoningBytes  int           `json:"reasoning_bytes"`
	InputTokens     int64         `json:"input_tokens"`
	OutputTokens    int64         `json:"output_tokens"`
	TimeToOutcome   time.Duration `json:"time_to_outcome_ns"`
}

// Pass is the corpus run once with one set of instructions.
type Pass struct {
	// Instructions names where the instructions came from (a file, or
	// "agent" for the agent's own).
	Instructions string              `json:"instructions"`
	Agent        brainwire.AgentInfo `json:"-"`
	Results      []Result            `json:"-"`
	Elapsed      time.Duration       `json:"-"`
}

// Run runs every case once through target, at most cfg.Concurrency at a
// time, and returns their results in corpus order. A case whose capture
// could not be run at all (the server refused it) fails the pass; a
// capture that ends in ERROR is a result like any other.
func Run(ctx context.Context, cfg Config, open Open, label, instructions string) (*Pass, error) {
	obs := newCollector()
	target, err := open(ctx, instructions, obs)
	if err != nil {
		return nil, err
	}
	if target.Close != nil {
		defer target.Close()
	}
	srv := httptest.NewServer(target.Handler)
	defer srv.Close()
	client := srv.Client()

	n := cfg.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	start := time.Now()
	results := make([]Result, len(cfg.Cases))
	errs := make([]error, len(cfg.Cases))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, c := range cfg.Cases {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			runID := fmt.Sprintf("%s-%s-%d", cfg.RunID, label, i+1)
			if err := capture(ctx, client, srv.URL, target.APIKey, c.Text, runID); err != nil {
				errs[i] = fmt.Errorf("case %s: %w", c.ID, err)
				cancel()
				return
			}
			res, err := obs.result(ctx, c, runID)
			if err != nil {
				errs[i] = fmt.Errorf("case %s: %w", c.ID, err)
				cancel()
				return
			}
			results[i] = res
			mu.Lock()
			done++
			if cfg.Progress != nil {
				cfg.Progress(done, len(cfg.Cases))
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
	return &Pass{Instructions: label, Agent: target.Agent, Results: results, Elapsed: time.Since(start)}, nil
}

// capture posts one capture as the phone does and reads its stream to the
// end (COMPLETE).
func capture(ctx context.Context, client *http.Client, base, key, text, runID string) error {
	body, _ := json.Marshal(map[string]string{"text": text, "run_id": runID})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/capture", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("capture request: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var d struct{ Detail string }
		_ = json.NewDecoder(resp.Body).Decode(&d)
		return fmt.Errorf("the server refused the capture: %s %s", resp.Status, d.Detail)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `data: {"type":"COMPLETE"`) {
			// Read on to the end, so that the server ends the capture
			// before the connection goes.
			_, _ = io.Copy(io.Discard, resp.Body)
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the capture stream: %w", err)
	}
	return errors.New("the capture stream ended without COMPLETE")
}

// collector keeps what each capture's result and reasoning were, by the
// capture's run id.
type collector struct {
	mu   sync.Mutex
	runs map[string]*runRecord
}

type runRecord struct {
	res   brainwire.CaptureResult
	bytes int
	ended chan struct{} // closed by End
}

func newCollector() *collector { return &collector{runs: map[string]*runRecord{}} }

// StartCapture implements brainwire.Observer.
func (o *collector) StartCapture(ctx context.Context, c brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	r := &runRecord{ended: make(chan struct{})}
	o.mu.Lock()
	o.runs[c.RunID] = r
	o.mu.Unlock()
	return ctx, &runObserver{o: o, r: r}
}

type runObserver struct {
	o *collector
	r *runRecord
}

func (ro *runObserver) ProviderEvent(brainwire.Event) {}

func (ro *runObserver) CaptureEvent(ev brainwire.CaptureEvent) {
	if ev.Type == brainwire.CaptureReasoning {
		ro.o.mu.Lock()
		ro.r.bytes += len(ev.Chunk.Text)
		ro.o.mu.Unlock()
	}
}

func (ro *runObserver) End(res brainwire.CaptureResult) {
	ro.o.mu.Lock()
	ro.r.res = res
	ro.o.mu.Unlock()
	close(ro.r.ended)
}

// result is the case's result, once the server has ended the capture: it
// does so right after sending COMPLETE.
func (o *collector) result(ctx context.Context, c Case, runID string) (Result, error) {
	o.mu.Lock()
	r := o.runs[runID]
	o.mu.Unlock()
	out := Result{Case: c, RunID: runID}
	if r == nil {
		return out, errors.New("the server ran no capture with its run id")
	}
	select {
	case <-r.ended:
	case <-ctx.Done():
		return out, ctx.Err()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	res := r.res
	out.Outcome, out.Question, out.ErrorMessage = res.Outcome, res.Question, res.ErrorMessage
	if res.HasConfidence() {
		out.Bucket, out.Conf = res.Bucket, res.Confidence
	}
	out.Correct = c.Correct(out.Outcome, out.Bucket)
	out.ReasoningChunks, out.ReasoningBytes = res.ReasoningChunks, r.bytes
	out.InputTokens, out.OutputTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	out.TimeToOutcome = res.TimeToOutcome
	return out, nil
}
