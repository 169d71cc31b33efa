package telemetry

import (
	"log/slog"
	"sync"
	"time"
)

// ErrorHandler logs the OpenTelemetry SDK's errors (failed exports, mostly)
// at WARN, at most one line a minute with a count of the ones left out,
// so an unreachable collector is visible without flooding the log. Install
// it with otel.SetErrorHandler.
type ErrorHandler struct {
	Logger *slog.Logger

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Handle implements otel.ErrorHandler.
func (h *ErrorHandler) Handle(err error) {
	h.mu.Lock()
	now := time.Now()
	if !h.last.IsZero() && now.Sub(h.last) < time.Minute {
		h.suppressed++
		h.mu.Unlock()
		return
	}
	n := h.suppressed
	h.last, h.suppressed = now, 0
	h.mu.Unlock()
	h.Logger.Warn("telemetry export failed; captures are not affected", "error", err, "similar_errors_since_last_report", n)
}
