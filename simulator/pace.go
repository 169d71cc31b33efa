package simulator

import (
	"context"
	"math"
	"sync/atomic"
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
	late  *lateCounts // nil: not counted
}

// newPacer starts a schedule at now; a delay of zero or less never waits.
// late, when not nil, counts how late each paced frame is ready.
func newPacer(delay time.Duration, now func() time.Time, late *lateCounts) *pacer {
	return &pacer{delay: delay, now: now, due: now(), late: late}
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
	if p.delay <= 0 {
		return
	}
	if d := p.next(); d > 0 {
		if p.timer == nil {
			p.timer = time.NewTimer(d)
		} else {
			p.timer.Reset(d)
		}
		select {
		case <-p.timer.C:
		case <-cancel:
			p.timer.Stop()
			return
		case <-ctx.Done():
			p.timer.Stop()
			return
		}
	}
	if p.late != nil {
		p.late.add(max(p.now().Sub(p.due), 0))
	}
}

// lateCounts counts paced frames by how late each was ready to write,
// against its stream's schedule: what the simulator's own load adds to
// the latency its clients see. Bucket i holds the frames at most
// lateBound(i) late; the last one, the later ones. Safe for concurrent
// use.
type lateCounts struct{ n [lateBuckets]atomic.Int64 }

// The buckets' bounds grow by a fourth of an octave (19 %) from 125 µs:
// the last bound is about 40 s.
const (
	lateBuckets = 80
	lateFirst   = 125 * time.Microsecond
)

// lateBound is bucket i's upper bound.
func lateBound(i int) time.Duration {
	return time.Duration(float64(lateFirst) * math.Exp2(float64(i)/4))
}

func (c *lateCounts) add(late time.Duration) {
	i := 0
	if late > lateFirst {
		i = min(int(math.Ceil(4*math.Log2(float64(late)/float64(lateFirst)))), lateBuckets-1)
	}
	c.n[i].Add(1)
}

// snapshot returns the buckets' bounds in milliseconds (one fewer than
// the counts: the last bucket has none) and their counts.
func (c *lateCounts) snapshot() LateCounts {
	l := LateCounts{BoundsMs: make([]float64, lateBuckets-1), Counts: make([]int64, lateBuckets)}
	for i := range c.n {
		if i < lateBuckets-1 {
			l.BoundsMs[i] = float64(lateBound(i)) / float64(time.Millisecond)
		}
		l.Counts[i] = c.n[i].Load()
	}
	return l
}
