package simulator

import (
	"context"
	"testing"
	"time"
)

// A frame written late is followed by the next one when that one is due:
// the schedule is the stream's start plus k delays, so a busy moment does
// not push every later frame back.
func TestPacerKeepsItsSchedule(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	now := start
	p := newPacer(25*time.Millisecond, func() time.Time { return now })

	if got := p.next(); got != 25*time.Millisecond {
		t.Fatalf("first frame: wait %v, want 25ms", got)
	}
	now = start.Add(25 * time.Millisecond)
	// The writer is busy for 60 ms after the first frame.
	now = now.Add(60 * time.Millisecond)
	// Frames 2 and 3 were due at 50 and 75 ms: no wait for either.
	for k := 2; k <= 3; k++ {
		if got := p.next(); got != 0 {
			t.Fatalf("frame %d, due before now: wait %v, want 0", k, got)
		}
	}
	// Frame 4 is due at 100 ms, 15 ms from now (85 ms), not 25.
	if got := p.next(); got != 15*time.Millisecond {
		t.Fatalf("frame 4: wait %v, want 15ms", got)
	}
}

func TestPacerWithoutDelayNeverWaits(t *testing.T) {
	for _, d := range []time.Duration{0, -1} {
		p := newPacer(d, time.Now)
		for range 3 {
			if got := p.next(); got != 0 {
				t.Fatalf("delay %v: wait %v", d, got)
			}
		}
	}
}

// pause gives way to a cancel or a client that left, and can wait again
// after either with the same timer.
func TestPacerPauseStopsEarly(t *testing.T) {
	p := newPacer(time.Hour, time.Now)
	cancel := make(chan struct{})
	close(cancel)
	p.pause(context.Background(), cancel)

	ctx, stop := context.WithCancel(context.Background())
	stop()
	p.pause(ctx, nil)

	p = newPacer(time.Millisecond, time.Now)
	for range 3 {
		p.pause(context.Background(), nil)
	}
	if late := time.Until(p.due); late > 0 {
		t.Fatalf("pause returned %v before the frame was due", late)
	}
}
