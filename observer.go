package brainwire

import "context"

// Observer watches captures on behalf of telemetry (traces, logs, metrics,
// Application Insights) and the recorder. Its methods run on the capture's
// hot path, once per event: implementations must return quickly and never
// block on I/O.
type Observer interface {
	// StartCapture is called before STEP_START; the returned context
	// carries whatever the observer needs downstream (e.g. a span) to the
	// provider's upstream calls and the tool calls.
	StartCapture(ctx context.Context, c Capture) (context.Context, CaptureObserver)
}

// CaptureObserver watches one capture.
type CaptureObserver interface {
	// ProviderEvent sees every normalized event from the provider.
	ProviderEvent(ev AgentEvent)
	// CaptureEvent sees every capture event, including each reasoning
	// chunk as it arrives and the outcome.
	CaptureEvent(ev CaptureEvent)
	// End is called once, after COMPLETE, with how the capture ended.
	End(res CaptureResult)
}

// Observers fans out to several observers.
type Observers []Observer

// StartCapture implements Observer.
func (os Observers) StartCapture(ctx context.Context, c Capture) (context.Context, CaptureObserver) {
	obs := make(captureObservers, 0, len(os))
	for _, o := range os {
		var co CaptureObserver
		ctx, co = o.StartCapture(ctx, c)
		obs = append(obs, co)
	}
	return ctx, obs
}

type captureObservers []CaptureObserver

func (cs captureObservers) ProviderEvent(ev AgentEvent) {
	for _, c := range cs {
		c.ProviderEvent(ev)
	}
}

func (cs captureObservers) CaptureEvent(ev CaptureEvent) {
	for _, c := range cs {
		c.CaptureEvent(ev)
	}
}

func (cs captureObservers) End(res CaptureResult) {
	for _, c := range cs {
		c.End(res)
	}
}

// ReplayObserver is implemented by observers that also count captures
// replayed for a repeated request (Idempotency-Key): no agent ran, nothing
// was filed, so they are not captures. CaptureReplayed runs on the
// request's path: it must return quickly and never block on I/O.
type ReplayObserver interface {
	CaptureReplayed(ctx context.Context, c Capture, res CaptureResult)
}

// CaptureReplayed implements ReplayObserver: it tells every observer that
// counts replays.
func (os Observers) CaptureReplayed(ctx context.Context, c Capture, res CaptureResult) {
	for _, o := range os {
		if ro, ok := o.(ReplayObserver); ok {
			ro.CaptureReplayed(ctx, c, res)
		}
	}
}

// StartShadow implements ShadowObserver: the observers that watch shadow
// trials watch it; the others (the reasoning log, the recorder) never see
// a shadow run.
func (os Observers) StartShadow(ctx context.Context, c Capture, production TraceRef) (context.Context, CaptureObserver) {
	obs := make(captureObservers, 0, len(os))
	for _, o := range os {
		if so, ok := o.(ShadowObserver); ok {
			var co CaptureObserver
			ctx, co = so.StartShadow(ctx, c, production)
			obs = append(obs, co)
		}
	}
	return ctx, obs
}

// ShadowKept implements ShadowObserver.
func (os Observers) ShadowKept(ctx context.Context, t ShadowTrial) {
	for _, o := range os {
		if so, ok := o.(ShadowObserver); ok {
			so.ShadowKept(ctx, t)
		}
	}
}

// ShadowDropped implements ShadowObserver.
func (os Observers) ShadowDropped(ctx context.Context, reason string) {
	for _, o := range os {
		if so, ok := o.(ShadowObserver); ok {
			so.ShadowDropped(ctx, reason)
		}
	}
}
