package simulator

import (
	"testing"
	"time"
)

// A frame written late is followed by the next one when that one is due:
// the schedule is the stream's start plus k delays, so a busy moment does
// not push every later frame back.
func TestPacerKeepsItsSchedule(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	now := start
	p := newPacer(25*time.Millisecond, func() time.Time { return now }, nil)

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

// Each paced frame lands in the bucket whose bound is the least at or
// above its lateness.
func TestLateCountsBuckets(t *testing.T) {
	var c lateCounts
	for _, late := range []time.Duration{0, lateFirst, lateFirst + 1, 10 * time.Millisecond, time.Hour} {
		c.add(late)
	}
	s := c.snapshot()
	want := map[int]int64{0: 2, 1: 1, lateBuckets - 1: 1}
	// 10 ms: 4·log2(80) = 25.3, so bucket 26 (bound 11.3 ms).
	want[26] = 1
	for i, n := range s.Counts {
		if n != want[i] {
			t.Errorf("bucket %d (bound %v): %d frames, want %d", i, lateBound(i), n, want[i])
		}
	}
	if b := s.BoundsMs[26]; b < 10 || b > 12 {
		t.Errorf("bucket 26's bound: %v ms", b)
	}
}
