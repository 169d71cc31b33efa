package brainwire

import (
	"context"
	"time"
)

// Observer watches captures on behalf of telemetry (traces, logs, metrics,
// Application Insights). Its methods run on the capture's hot path, once
// per event: implementations must return quickly and never block on I/O.
type Observer interface {
	// StartCapture is called before STEP_START; the returned context
	// carries whatever the observer needs downstream (e.g. a span).
	StartCapture(ctx context.Context, c CaptureInfo) (context.Context, CaptureObserver)
}

// CaptureObserver watches one capture.
type CaptureObserver interface {
	// ProviderEvent sees every normalized event from the provider.
	ProviderEvent(ev Event)
	// CaptureEvent sees every capture event, including each reasoning
	// chunk as it arrives and the outcome.
	CaptureEvent(ev CaptureEvent)
	// End is called once, after COMPLETE; err is the run's error, if any.
	End(err error)
}

// CaptureInfo describes a capture as it starts.
type CaptureInfo struct {
	Kind     CaptureKind
	ThreadID string // the capture's thread id
	RunID    string // the capture's run id
	UserID   string
	Text     string // typed text; empty for voice
	// UpstreamThreadID is set when the run continues an existing thread.
	UpstreamThreadID string
	Start            time.Time
}

// Observers fans out to several observers.
type Observers []Observer

// StartCapture implements Observer.
func (os Observers) StartCapture(ctx context.Context, c CaptureInfo) (context.Context, CaptureObserver) {
	obs := make(captureObservers, 0, len(os))
	for _, o := range os {
		var co CaptureObserver
		ctx, co = o.StartCapture(ctx, c)
		obs = append(obs, co)
	}
	return ctx, obs
}

type captureObservers []CaptureObserver

func (cs captureObservers) ProviderEvent(ev Event) {
	for _, c := range cs {
		c.ProviderEvent(ev)
	}
}

func (cs captureObservers) CaptureEvent(ev CaptureEvent) {
	for _, c := range cs {
		c.CaptureEvent(ev)
	}
}

func (cs captureObservers) End(err error) {
	for _, c := range cs {
		c.End(err)
	}
}
