package simulator

import (
	"context"
	"time"
)

// pacer spaces a stream's paced frames on a schedule fixed when the stream
// starts: the k-th paced frame is due k delays after the start. A model
// streams tokens at its own rate, whatever its client is doing, so a frame
// this process writes late (its CPU busy) is followed by the next one when
// that one is due, not a whole delay later: lateness does not add up over a
// run of fifty chunks and get counted as the client's.
type pacer struct {
	delay time.Duration
	now   func() time.Time
	due   time.Time // when the next paced frame is due
	timer *time.Timer
}

// newPacer starts a schedule at now; a delay of zero or less never waits.
func newPacer(delay time.Duration, now func() time.Time) *pacer {
	return &pacer{delay: delay, now: now, due: now()}
}

// next advances the schedule by one frame and returns how long to wait for
// it: zero when it is already due.
func (p *pacer) next() time.Duration {
	if p.delay <= 0 {
		return 0
	}
	p.due = p.due.Add(p.delay)
	return max(p.due.Sub(p.now()), 0)
}

// pause waits until the next paced frame is due, or less if ctx ends or
// cancel closes (nil never does).
func (p *pacer) pause(ctx context.Context, cancel <-chan struct{}) {
	d := p.next()
	if d <= 0 {
		return
	}
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
	case <-cancel:
		p.timer.Stop()
	case <-ctx.Done():
		p.timer.Stop()
	}
}
