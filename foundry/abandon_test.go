package foundry_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/foundry/foundrytest"
)

// exchanges is a transport that keeps the requests it carried and counts
// the response bodies not yet closed.
type exchanges struct {
	next http.RoundTripper

	mu   sync.Mutex
	ctxs []context.Context
	open int
}

func (x *exchanges) RoundTrip(req *http.Request) (*http.Response, error) {
	x.mu.Lock()
	x.ctxs = append(x.ctxs, req.Context())
	x.mu.Unlock()
	resp, err := x.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.open++
	x.mu.Unlock()
	resp.Body = &countedBody{ReadCloser: resp.Body, x: x}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	x    *exchanges
	once sync.Once
}

func (b *countedBody) Close() error {
	b.once.Do(func() {
		b.x.mu.Lock()
		b.x.open--
		b.x.mu.Unlock()
	})
	return b.ReadCloser.Close()
}

// checkReleased fails if a response body is still open or a request's
// context does not end: the run that made them is over, its capture gone.
// A stream read to its end keeps its context for a moment (drain.Wait),
// for the transport to read the rest of the body.
func (x *exchanges) checkReleased(t *testing.T) {
	t.Helper()
	x.mu.Lock()
	open, ctxs := x.open, x.ctxs
	x.mu.Unlock()
	if open != 0 {
		t.Errorf("%d response bodies left open", open)
	}
	for i, ctx := range ctxs {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Errorf("request %d: context still alive after the run", i+1)
		}
	}
	// A run's request ends in a goroutine of its own: give it the time to.
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		if !bytes.Contains(buf, []byte("internal/linger")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of a finished run are still running:\n%s", buf)
		}
		time.Sleep(time.Millisecond)
	}
}

func trackedProvider(t *testing.T, srv *foundrytest.Server, opts ...foundry.ProviderOption) (*foundry.Provider, *exchanges) {
	t.Helper()
	x := &exchanges{next: srv.Client().Transport}
	c, err := foundry.NewClient(srv.Endpoint(), &http.Client{Transport: foundry.NewStaticTokenTransport("test-token", x)})
	if err != nil {
		t.Fatal(err)
	}
	return mustProvider(t, c, "asst_classifier", opts...), x
}

type runResult struct {
	evs   []brainwire.AgentEvent
	err   error
	errAt time.Time // when err was yielded
}

// runAsync runs p in the background; the channel gets what it yielded
// once Run returns.
func runAsync(ctx context.Context, p *foundry.Provider, req brainwire.RunRequest, tools brainwire.ToolSet) <-chan runResult {
	done := make(chan runResult, 1)
	go func() {
		var res runResult
		for ev, err := range runAgent(ctx, p, req, tools) {
			if err != nil {
				res.err, res.errAt = err, time.Now()
				continue
			}
			res.evs = append(res.evs, ev)
		}
		done <- res
	}()
	return done
}

// abandonAtCreate runs req through p in the background and lets its
// capture go as soon as the service has the request g holds; it returns
// when the capture went, and what Run yields once it returns.
func abandonAtCreate(t *testing.T, p *foundry.Provider, g *foundrytest.Gate, req brainwire.RunRequest, tools brainwire.ToolSet) (time.Time, <-chan runResult) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := runAsync(ctx, p, req, tools)
	await(t, g.Reached(), "the request creating the run")
	cancel()
	return time.Now(), done
}

func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// abandonedRun is a run whose capture goes away while g holds the
// creating request's answer, before the stream names the run.
type abandonedRun struct {
	name   string
	req    brainwire.RunRequest
	tools  brainwire.ToolSet
	script func(g *foundrytest.Gate) []foundrytest.Call
}

func abandonedRuns(r foundrytest.Run, rest ...foundrytest.Event) []abandonedRun {
	named := []foundrytest.Event{r.ThreadCreated(), r.Created(), r.InProgress()}
	return []abandonedRun{
		{
			name:  "before the first event",
			req:   brainwire.RunRequest{Message: "x"},
			tools: echoTools(),
			script: func(g *foundrytest.Gate) []foundrytest.Call {
				return []foundrytest.Call{foundrytest.Expect("POST /threads/runs",
					foundrytest.Stream(append(append([]foundrytest.Event{g.Hold()}, named...), rest...)...))}
			},
		},
		{
			name:  "before the answer",
			req:   brainwire.RunRequest{Message: "x"},
			tools: echoTools(),
			script: func(g *foundrytest.Gate) []foundrytest.Call {
				return []foundrytest.Call{foundrytest.Expect("POST /threads/runs",
					foundrytest.Stream(append(named, rest...)...).HeldBy(g))}
			},
		},
		{
			name: "on an existing thread",
			req:  brainwire.RunRequest{ThreadID: "thread_1", Message: "x", AdditionalInstructions: "Round 1."},
			script: func(g *foundrytest.Gate) []foundrytest.Call {
				return []foundrytest.Call{foundrytest.Expect("POST /threads/thread_1/runs",
					foundrytest.Stream(append([]foundrytest.Event{g.Hold(), r.Created(), r.InProgress()}, rest...)...))}
			},
		},
		{
			name: "on a new thread with instructions",
			req:  brainwire.RunRequest{Message: "x", AdditionalInstructions: "Round 1."},
			script: func(g *foundrytest.Gate) []foundrytest.Call {
				return []foundrytest.Call{
					foundrytest.Expect("POST /threads", foundrytest.JSON(200, `{"id":"thread_1","object":"thread"}`)),
					foundrytest.Expect("POST /threads/thread_1/runs",
						foundrytest.Stream(append([]foundrytest.Event{r.Created(), r.InProgress()}, rest...)...).HeldBy(g)),
				}
			},
		},
	}
}

// A capture that goes away after the request creating its run was sent,
// before the stream named the run, is told so at once, and still gets
// the run cancelled: as the run is closed, the stream is read on until
// the run's id comes, and nothing read then is yielded.
func TestRunAbandonedBeforeTheRunIsNamed(t *testing.T) {
	const cancelTimeout = 5 * time.Second
	r := foundrytest.NewRun("thread_1", "run_1")
	for _, tc := range abandonedRuns(r, foundrytest.MessageDelta("m", "thinking"), foundrytest.Hang()) {
		t.Run(tc.name, func(t *testing.T) {
			g := foundrytest.NewGate()
			srv := foundrytest.NewServer(t, tc.script(g)...)
			p, x := trackedProvider(t, srv, foundry.WithCancelTimeout(cancelTimeout))
			gone, done := abandonAtCreate(t, p, g, tc.req, tc.tools)
			// The request must outlive the capture: give a client that
			// hangs up with it the time to show.
			select {
			case <-g.Left():
				t.Fatal("the client hung up on the request creating the run")
			case <-time.After(100 * time.Millisecond):
			}
			opened := time.Now()
			g.Open()
			res := await(t, done, "Run to return")
			if took := time.Since(gone); took >= cancelTimeout {
				t.Errorf("Run returned %v after the capture went away", took)
			}

			if len(res.evs) != 0 {
				t.Errorf("yielded %s to a consumer gone", kinds(res.evs))
			}
			if !errors.Is(res.err, context.Canceled) || !res.errAt.Before(opened) {
				t.Errorf("error %v, yielded %v after the capture went away, %v before the stream went on", res.err, res.errAt.Sub(gone), opened.Sub(res.errAt))
			}
			cancels := srv.Cancels()
			if len(cancels) != 1 || cancels[0].Path != "/threads/thread_1/runs/run_1/cancel" {
				t.Fatalf("cancels %v", cancels)
			}
			x.checkReleased(t)
		})
	}
}

// When the stream does not name the run within the cancel timeout, the
// provider gives up on it: no cancel, and everything released.
func TestRunAbandonedRunNeverNamed(t *testing.T) {
	const cancelTimeout = 200 * time.Millisecond
	r := foundrytest.NewRun("thread_1", "run_1")
	for _, tc := range abandonedRuns(r, foundrytest.Hang()) {
		t.Run(tc.name, func(t *testing.T) {
			g := foundrytest.NewGate() // never opened
			srv := foundrytest.NewServer(t, tc.script(g)...)
			p, x := trackedProvider(t, srv, foundry.WithCancelTimeout(cancelTimeout))
			gone, done := abandonAtCreate(t, p, g, tc.req, tc.tools)
			res := await(t, done, "Run to return")
			if took := time.Since(gone); took < cancelTimeout {
				t.Errorf("gave up on the run after %v, before the cancel timeout", took)
			}
			await(t, g.Left(), "the client to hang up on the held request")

			if len(res.evs) != 0 || !errors.Is(res.err, context.Canceled) {
				t.Errorf("events %s, error %v", kinds(res.evs), res.err)
			}
			if n := len(srv.Cancels()); n != 0 {
				t.Errorf("%d cancels for a run never named", n)
			}
			x.checkReleased(t)
		})
	}
}

// A run that the stream, once it names it, reports over needs no cancel.
func TestRunAbandonedRunEndsBeforeItIsNamed(t *testing.T) {
	r := foundrytest.NewRun("thread_1", "run_1")
	for _, end := range []foundrytest.Event{
		r.Completed(foundrytest.Usage{Prompt: 10, Completion: 2, Total: 12}), // usage comes first
		r.Failed("rate_limit_exceeded", "Rate limit is exceeded."),
	} {
		t.Run(end.Name, func(t *testing.T) {
			g := foundrytest.NewGate()
			srv := foundrytest.NewServer(t, foundrytest.Expect("POST /threads/runs",
				foundrytest.Stream(g.Hold(), r.ThreadCreated(), end, foundrytest.Done())))
			p, x := trackedProvider(t, srv)
			_, done := abandonAtCreate(t, p, g, brainwire.RunRequest{Message: "x"}, nil)
			g.Open()
			res := await(t, done, "Run to return")
			if len(res.evs) != 0 || !errors.Is(res.err, context.Canceled) {
				t.Errorf("events %s, error %v", kinds(res.evs), res.err)
			}
			if n := len(srv.Cancels()); n != 0 {
				t.Errorf("%d cancels for a run already over", n)
			}
			x.checkReleased(t)
		})
	}
}

// A capture that goes away once the run is named stops reading at once
// and cancels the run, without a grace period.
func TestRunAbandonedAfterTheRunIsNamed(t *testing.T) {
	const cancelTimeout = time.Minute // what waiting for it would take
	r := foundrytest.NewRun("thread_1", "run_1")
	g := foundrytest.NewGate() // never opened
	srv := foundrytest.NewServer(t, foundrytest.Expect("POST /threads/runs", foundrytest.Stream(
		r.ThreadCreated(), r.Created(), r.InProgress(), foundrytest.MessageDelta("m", "one"), g.Hold(), foundrytest.MessageDelta("m", "two"))))
	p, x := trackedProvider(t, srv, foundry.WithCancelTimeout(cancelTimeout))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var evs []brainwire.AgentEvent
	var final error
	var gone time.Time
	for ev, err := range runAgent(ctx, p, brainwire.RunRequest{Message: "x"}, nil) {
		if err != nil {
			final = err
			continue
		}
		evs = append(evs, ev)
		if ev.Kind == brainwire.AgentTextChunk {
			cancel()
			gone = time.Now()
		}
	}
	if took := time.Since(gone); took > 10*time.Second {
		t.Errorf("Run returned %v after the capture went away", took)
	}
	if got := kinds(evs); got != "run_status:queued run_status:in_progress text_chunk" || !errors.Is(final, context.Canceled) {
		t.Errorf("events %s, error %v", got, final)
	}
	cancels := srv.Cancels()
	if len(cancels) != 1 || cancels[0].Path != "/threads/thread_1/runs/run_1/cancel" {
		t.Fatalf("cancels %v", cancels)
	}
	await(t, g.Left(), "the client to hang up on the stream")
	x.checkReleased(t)
}

// A run completed before its capture ends keeps its request going until
// the capture ends, as a request made with the capture's context would:
// the transport may still be reading the end of the body.
func TestRunCompletedReleasesWithTheCapture(t *testing.T) {
	r := foundrytest.NewRun("thread_1", "run_1")
	srv := foundrytest.NewServer(t, foundrytest.Expect("POST /threads/runs", foundrytest.Stream(
		r.ThreadCreated(), r.Created(), r.InProgress(), foundrytest.MessageDelta("m", "ok"), r.Completed(foundrytest.Usage{Total: 3}), foundrytest.Done())))
	p, x := trackedProvider(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	evs, err := collect(t, runAgent(ctx, p, brainwire.RunRequest{Message: "x"}, nil))
	if err != nil || kinds(evs[len(evs)-1:]) != "run_status:completed" {
		t.Fatalf("events %s, error %v", kinds(evs), err)
	}
	x.mu.Lock()
	alive := x.ctxs[0].Err() == nil
	x.mu.Unlock()
	if !alive {
		t.Error("the request's context ended before the capture did")
	}
	cancel()
	select {
	case <-x.ctxs[0].Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the request's context outlived the capture")
	}
	x.checkReleased(t)
	if n := len(srv.Cancels()); n != 0 {
		t.Errorf("%d cancels for a completed run", n)
	}
}
