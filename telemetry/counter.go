package telemetry

import (
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// DefaultZeroHold is how long a counter's new series reads 0 before it
// shows its count (Settings.ZeroHold).
const DefaultZeroHold = time.Minute

// counter is a monotonic counter whose every series starts at zero.
//
// Prometheus computes increase() and rate() from the samples it has: a
// series whose first sample already holds its first increments (a rare
// outcome's first capture, say) counts from there, and those increments
// are lost to every dashboard. So a new series is reported as 0 from the
// first collection that sees it until hold has passed, long enough for a
// scrape to store the zero; then its count. Counts of new series show up
// that much later, and none goes missing. At shutdown every series shows
// its count, so that nothing is held back from the final export.
//
// The SDK reads it as an asynchronous counter (cumulative, monotonic), so
// it exports like any other counter.
type counter struct {
	inst    metric.Int64ObservableCounter
	hold    time.Duration
	now     func() time.Time
	enabled bool // a meter provider collects it; off, adding does nothing

	mu     sync.Mutex
	series map[attribute.Distinct]*series
	final  bool
}

type series struct {
	opt   metric.ObserveOption
	n     int64
	shown time.Time // when a collection first saw it; zero until then
}

func newCounter(m metric.Meter, name, unit, description string, hold time.Duration, now func() time.Time, enabled bool) (*counter, error) {
	inst, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(description))
	if err != nil {
		return nil, err
	}
	return &counter{inst: inst, hold: hold, now: now, enabled: enabled, series: map[attribute.Distinct]*series{}}, nil
}

// add adds n to the series of kv.
func (c *counter) add(n int64, kv ...attribute.KeyValue) {
	if !c.enabled {
		return
	}
	set := attribute.NewSet(kv...)
	c.mu.Lock()
	s := c.series[set.Equivalent()]
	if s == nil {
		s = &series{opt: metric.WithAttributeSet(set)}
		c.series[set.Equivalent()] = s
	}
	s.n += n
	c.mu.Unlock()
}

// declare makes the series of kv exist, at zero until something is added,
// so that dashboards show 0 for outcomes that have not happened yet.
func (c *counter) declare(kv ...attribute.KeyValue) { c.add(0, kv...) }

// observe reports every series to a collection.
func (c *counter) observe(o metric.Observer) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.series {
		v := s.n
		switch {
		case c.final || c.hold <= 0:
		case s.shown.IsZero():
			s.shown, v = now, 0
		case now.Sub(s.shown) < c.hold:
			v = 0
		}
		o.ObserveInt64(c.inst, v, s.opt)
	}
}

// release makes every series show its count from now on.
func (c *counter) release() {
	c.mu.Lock()
	c.final = true
	c.mu.Unlock()
}
