package server

import (
	"context"
	"log/slog"

	"github.com/brainwire/brainwire"
)

// ReasoningLog writes every reasoning chunk to a structured log at INFO,
// with the capture's run_id and the chunk_index, so the chain-of-thought can
// be read back from the logs even when no trace backend is configured.
type ReasoningLog struct {
	Logger *slog.Logger
}

// ReasoningChunk implements brainwire.ReasoningSink.
func (l ReasoningLog) ReasoningChunk(ctx context.Context, c brainwire.ReasoningChunk) {
	l.Logger.LogAttrs(ctx, slog.LevelInfo, "reasoning chunk",
		slog.String("run_id", c.RunID),
		slog.Int("chunk_index", c.Index),
		slog.String("reasoning_text", c.Text),
		slog.String("foundry.run_id", c.UpstreamRunID),
		slog.String("foundry.thread_id", c.UpstreamThreadID),
	)
}
