package telemetry

import (
	"context"
	"log/slog"

	"github.com/brainwire/brainwire"
)

// LogObserver writes every reasoning chunk to a structured log at INFO,
// with the capture's run_id and the chunk_index, so the chain-of-thought
// can be read back from the logs even when no trace backend is configured.
type LogObserver struct {
	Logger *slog.Logger
}

var _ brainwire.Observer = LogObserver{}

// StartCapture implements brainwire.Observer.
func (l LogObserver) StartCapture(ctx context.Context, _ brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return ctx, logCapture{ctx: ctx, log: l.Logger}
}

type logCapture struct {
	ctx context.Context
	log *slog.Logger
}

func (logCapture) ProviderEvent(brainwire.AgentEvent) {}
func (logCapture) End(brainwire.CaptureResult)        {}

func (l logCapture) CaptureEvent(ev brainwire.CaptureEvent) {
	if ev.Type != brainwire.CaptureReasoning {
		return
	}
	c := ev.Chunk
	l.log.LogAttrs(l.ctx, slog.LevelInfo, "reasoning chunk",
		slog.String("run_id", c.RunID),
		slog.Int("chunk_index", c.Index),
		slog.String("reasoning_text", c.Text),
		slog.String("foundry.run_id", c.UpstreamRunID),
		slog.String("foundry.thread_id", c.UpstreamThreadID),
	)
}
