// Package linger gives a request a context that may outlive its caller's
// for a grace period, while the request finishes something only it can:
// a stream that has yet to name the run it created, so that the run can be
// cancelled (foundry), or a body whose last bytes are still to be read, so
// that its connection is kept (drain).
//
// Such a context ends when its parent does, except while it is held: then
// it ends a grace period after its parent, or as soon as it is released,
// whichever comes first.
package linger

import (
	"context"
	"sync"
	"time"
)

// Linger is the handle of a lingering context. Its methods are safe for
// concurrent use.
type Linger struct {
	parent context.Context
	cancel context.CancelFunc
	grace  time.Duration

	mu    sync.Mutex
	held  bool
	timer *time.Timer // the grace period, once parent ended while held
}

// New returns a context that ends when parent does, or, should parent end
// while the Linger is held, grace later. It carries parent's values, and
// parent's deadline as its Deadline: what decides by the deadline (a wait
// before a call is sent again: is there time for it?) decides by the
// caller's, though the context may outlive it.
func New(parent context.Context, grace time.Duration) (context.Context, *Linger) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	l := &Linger{parent: parent, cancel: cancel, grace: grace}
	// Never unregistered: a released context still ends with parent, as
	// a request made with parent would.
	context.AfterFunc(parent, l.parentEnded)
	return callersDeadline{ctx, parent}, l
}

// callersDeadline is a lingering context: its own end, its caller's
// deadline.
type callersDeadline struct {
	context.Context
	caller context.Context
}

func (c callersDeadline) Deadline() (time.Time, bool) { return c.caller.Deadline() }

func (l *Linger) parentEnded() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		l.timer = time.AfterFunc(l.grace, l.cancel)
		return
	}
	l.cancel()
}

// Hold asks for the grace period: from now on, parent's end gives the
// context grace more.
func (l *Linger) Hold() {
	l.mu.Lock()
	l.held = true
	l.mu.Unlock()
}

// Unhold takes the request back: from now on, parent's end ends the
// context at once. A grace period already begun runs on; whoever holds the
// request ends it with Release.
func (l *Linger) Unhold() {
	l.mu.Lock()
	l.held = false
	l.mu.Unlock()
}

// Release says the request is done. If parent has ended, the context ends
// now, and its grace period with it; otherwise it ends with parent.
func (l *Linger) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = false
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.parent.Err() != nil {
		l.cancel()
	}
}
