package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// collectCounter collects the reader and returns the counter's points by
// their "k" attribute.
func collectCounter(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("%s is %T, want a sum", m.Name, m.Data)
			}
			if !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality {
				t.Errorf("%s: monotonic %v, temporality %v", m.Name, sum.IsMonotonic, sum.Temporality)
			}
			for _, dp := range sum.DataPoints {
				k, _ := dp.Attributes.Value("k")
				out[k.AsString()] = dp.Value
			}
		}
	}
	return out
}

// TestCounterSeriesStartAtZero checks that a new series reads 0 for the
// hold from its first collection, then its count; that series declared
// up front do too; and that release shows every count at once.
func TestCounterSeriesStartAtZero(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := newCounter(mp.Meter("test"), "c", "{x}", "test", time.Minute, func() time.Time { return clock }, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mp.Meter("test").RegisterCallback(func(_ context.Context, o metric.Observer) error {
		c.observe(o)
		return nil
	}, c.inst); err != nil {
		t.Fatal(err)
	}
	k := func(v string) attribute.KeyValue { return attribute.String("k", v) }

	c.add(1, k("rare"))
	c.declare(k("declared"))
	if got := collectCounter(t, r); got["rare"] != 0 || got["declared"] != 0 || len(got) != 2 {
		t.Fatalf("first collection %v: want both at 0", got)
	}
	c.add(2, k("rare"))
	clock = clock.Add(59 * time.Second)
	if got := collectCounter(t, r); got["rare"] != 0 {
		t.Fatalf("within the hold: %v", got)
	}
	clock = clock.Add(time.Second)
	c.add(1, k("declared"))
	c.add(5, k("late")) // a series seen for the first time now starts its own hold
	got := collectCounter(t, r)
	if got["rare"] != 3 || got["declared"] != 1 || got["late"] != 0 {
		t.Fatalf("after the hold: %v, want rare 3, declared 1, late 0", got)
	}
	c.release()
	if got := collectCounter(t, r); got["late"] != 5 || got["rare"] != 3 {
		t.Fatalf("released: %v", got)
	}
}

// TestCounterWithoutHold shows counts at once, and a disabled counter
// keeps nothing.
func TestCounterWithoutHold(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	on, _ := newCounter(mp.Meter("test"), "on", "{x}", "", -1, time.Now, true)
	off, _ := newCounter(mp.Meter("test"), "off", "{x}", "", time.Minute, time.Now, false)
	if _, err := mp.Meter("test").RegisterCallback(func(_ context.Context, o metric.Observer) error {
		on.observe(o)
		off.observe(o)
		return nil
	}, on.inst, off.inst); err != nil {
		t.Fatal(err)
	}
	on.add(2, attribute.String("k", "a"))
	off.add(2, attribute.String("k", "b"))
	if got := collectCounter(t, r); got["a"] != 2 || len(got) != 1 {
		t.Fatalf("got %v, want a=2 only", got)
	}
}
