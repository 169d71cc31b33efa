package foundry

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

const grace = 5 * time.Second

// ended reports whether the request's context has ended, once everything
// the test set going has settled.
func ended(p *pendingRun) bool {
	synctest.Wait()
	return p.ctx.Err() != nil
}

func TestPendingRunGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		p := newPendingRun(parent, grace)
		cancel()
		if ended(p) {
			t.Fatal("the request ended with the run's context, the run not yet named")
		}
		time.Sleep(grace - time.Nanosecond)
		if ended(p) {
			t.Fatal("the request ended before the grace period did")
		}
		time.Sleep(time.Nanosecond)
		if !ended(p) {
			t.Fatal("the request outlived the grace period")
		}
		p.release()
	})
}

func TestPendingRunNamedInGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		p := newPendingRun(parent, grace)
		cancel()
		time.Sleep(grace / 2)
		p.known()
		if ended(p) {
			t.Fatal("the request ended as the run was named: the stream is the provider's to close")
		}
		p.release()
		if !ended(p) {
			t.Fatal("the request outlived its stream, the run's context gone")
		}
		if p.grace != nil {
			t.Fatal("the grace timer outlived the request")
		}
	})
}

func TestPendingRunNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		p := newPendingRun(parent, grace)
		p.known()
		cancel()
		if !ended(p) {
			t.Fatal("the request of a named run outlived the run's context")
		}
		p.release()
	})
}

func TestPendingRunReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		p := newPendingRun(parent, grace)
		p.release() // the stream ended without naming the run
		if ended(p) {
			t.Fatal("the request ended before the run's context did")
		}
		cancel()
		if !ended(p) {
			t.Fatal("the request of a consumed stream outlived the run's context")
		}
	})
}

func TestPendingRunGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		p := newPendingRun(parent, grace)
		cancel()
		synctest.Wait()
		p.release() // the stream broke off in the grace period
		if !ended(p) || p.grace != nil {
			t.Fatalf("after release: request ended %v, grace timer %v", p.ctx.Err() != nil, p.grace)
		}
	})
}
