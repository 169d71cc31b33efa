package load

import (
	"testing"
	"time"

	"github.com/brainwire/brainwire/simulator"
)

// The quantiles of a round are those of the frames counted between its
// two readings, each the upper bound of its bucket.
func TestLateQuantiles(t *testing.T) {
	bounds := []float64{1, 2, 4, 8}
	before := simulator.LateCounts{BoundsMs: bounds, Counts: []int64{500, 0, 0, 0, 7}}
	after := simulator.LateCounts{BoundsMs: bounds, Counts: []int64{500 + 90, 9, 0, 1, 7}}
	q := lateQuantiles(before, after)
	want := Quantiles{Count: 100, P50: time.Millisecond, P99: 2 * time.Millisecond, Max: 8 * time.Millisecond}
	if q != want {
		t.Errorf("quantiles %+v, want %+v", q, want)
	}

	// Later than the last bound: read as that bound.
	after.Counts[4] += 100
	if q := lateQuantiles(before, after); q.P99 != 8*time.Millisecond || q.Max != 8*time.Millisecond || q.Count != 200 {
		t.Errorf("with frames past the last bound: %+v", q)
	}
	// A first reading, and readings without a histogram (an older
	// simulator) or with another shape.
	if q := lateQuantiles(simulator.LateCounts{}, before); q.Count != 507 || q.P50 != time.Millisecond {
		t.Errorf("from nothing: %+v", q)
	}
	for _, c := range []struct{ before, after simulator.LateCounts }{
		{simulator.LateCounts{}, simulator.LateCounts{}},
		{before, before},
		{simulator.LateCounts{BoundsMs: bounds[:2], Counts: []int64{1, 2, 3}}, after},
		{before, simulator.LateCounts{BoundsMs: bounds, Counts: []int64{1}}},
	} {
		if q := lateQuantiles(c.before, c.after); q != (Quantiles{}) {
			t.Errorf("lateQuantiles(%+v, %+v) = %+v, want none", c.before, c.after, q)
		}
	}
}
