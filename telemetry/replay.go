package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/brainwire/brainwire"
)

var _ brainwire.ReplayObserver = (*Telemetry)(nil)

// CaptureReplayed implements brainwire.ReplayObserver: it counts a
// repeated request answered with its first capture's outcome.
func (t *Telemetry) CaptureReplayed(ctx context.Context, c brainwire.Capture, res brainwire.CaptureResult) {
	t.inst.replays.Add(ctx, 1, metric.WithAttributes(AttrOutcome.String(string(res.Outcome)), AttrKind.String(string(c.Kind))))
}
