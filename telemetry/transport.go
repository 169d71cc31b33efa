package telemetry

import (
	"cmp"
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire"
)

// WrapTransport returns a RoundTripper that gives every call to the agent
// service a client span under the span in the request's context, and sends
// the trace context upstream. The span is named after the operation the
// provider put on the request's context (brainwire.Operation:
// process_thread_run, submit_tool_outputs, ...), or the HTTP method. A
// streamed answer's span ends when its body is closed, stamped with the
// time the body ended; the body is passed through as it is read, never
// buffered. next nil means http.DefaultTransport.
//
// otelhttp.NewTransport ends the span when a Read returns io.EOF, and
// net/http returns a stream's last bytes together with io.EOF: run
// against a two-event SSE answer, both events reached the decoder after
// the span had ended, so a stream's last run state (completed, failed)
// would be lost from its span.
func (t *Telemetry) WrapTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{t: t, next: next}
}

type transport struct {
	t    *Telemetry
	next http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t := tr.t
	op, named := brainwire.OperationFrom(req.Context())
	name, methodAttr := method(req.Method)
	if !named {
		op.Name = name
	}
	var attrs []attribute.KeyValue
	if t.tracing {
		attrs = make([]attribute.KeyValue, 0, 12)
		if named {
			attrs = append(attrs, semconv.GenAIOperationNameKey.String(op.Name))
		}
		attrs = append(attrs,
			semconv.GenAIProviderNameKey.String(cmp.Or(op.Service, t.agent.Provider)),
			methodAttr,
			semconv.URLFull(redactURL(req.URL)),
		)
		if host, port := hostPort(req.URL); host != "" {
			attrs = append(attrs, semconv.ServerAddress(host))
			if port > 0 {
				attrs = append(attrs, semconv.ServerPort(port))
			}
		}
		attrs = append(attrs, upstreamIDs(op.ThreadID, op.RunID)...)
	}
	rs, resent := req.Context().Value(resendKey{}).(resend)
	resent = resent && t.tracing
	if resent {
		attrs = append(attrs, semconv.HTTPRequestResendCount(rs.count))
	}
	ctx, span := t.tracer.Start(req.Context(), op.Name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if resent {
		span.AddEvent(EventRetry, trace.WithAttributes(AttrRetryStatus.String(rs.reason), AttrRetryWaitMS.Int64(rs.wait.Milliseconds())))
	}
	cs := &clientSpan{t: t, ctx: ctx, span: span, op: op.Name, start: time.Now(), capture: captureFrom(req.Context())}

	out := req.Clone(ctx)
	t.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := tr.next.RoundTrip(out)
	if err != nil {
		typ := transportErrorType(ctx, err)
		if typ != "canceled" {
			t.attemptFailed(ctx, typ)
		}
		cs.finish(typ, err)
		return nil, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if resp.StatusCode >= 400 {
		code := strconv.Itoa(resp.StatusCode)
		t.attemptFailed(ctx, code)
		cs.errType = code
	}
	if cs.capture != nil && isEventStream(resp.Header) {
		cs.stream = true
		cs.capture.setStream(cs)
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		cs.finish(cs.errType, nil)
		return resp, nil
	}
	resp.Body = &spanBody{rc: resp.Body, cs: cs}
	return resp, nil
}

// resend marks a call sent again: the how-many-th time, why, and how long
// it waited (Resend).
type resend struct {
	count  int
	reason string
	wait   time.Duration
}

type resendKey struct{}

// Resend counts a call to the agent service about to be sent again
// (brainwire.upstream.retries, by operation and what refused it: the
// status, or the connection's failure) and returns the context the new
// attempt is sent with: its client span carries http.request.resend_count
// and a retry event saying why and how long it waited. The retry layer
// calls it (wiring connects them).
func (t *Telemetry) Resend(ctx context.Context, op string, count int, reason string, wait time.Duration) context.Context {
	if !t.enabled {
		return ctx
	}
	if a, ok := ctx.Value(attemptsKey{}).(*attempts); ok {
		a.settle(t, true)
	}
	kv := []attribute.KeyValue{semconv.GenAIOperationNameKey.String(op), AttrRetryStatus.String(reason)}
	c := captureFrom(ctx)
	if c != nil {
		kv = append(kv, c.versionAttr...)
	}
	if c == nil || !c.shadow {
		t.inst.retries.Add(ctx, 1, metric.WithAttributes(kv...))
	}
	return context.WithValue(ctx, resendKey{}, resend{count: count, reason: reason, wait: wait})
}

// WrapCalls returns a RoundTripper that follows each call to the agent
// service through a retry layer below it (next) down to WrapTransport's:
// an attempt that failed is counted in brainwire.upstream.errors once its
// fate is known, retried when the retry layer sends the call again
// (Resend), else when the call returns to its caller, having reached it.
// Without it, every failed attempt counts as one that reached the caller.
func (t *Telemetry) WrapCalls(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return callTransport{t: t, next: next}
}

type callTransport struct {
	t    *Telemetry
	next http.RoundTripper
}

func (ct callTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	a := &attempts{}
	resp, err := ct.next.RoundTrip(req.WithContext(context.WithValue(req.Context(), attemptsKey{}, a)))
	a.settle(ct.t, false)
	return resp, err
}

type attemptsKey struct{}

// attempts holds one call's failed attempt not counted yet (errType set):
// the last one, as the retry layer decides on each before it sends the
// next.
type attempts struct {
	mu      sync.Mutex
	ctx     context.Context // the failed attempt's
	errType string
	settled bool // the call returned: later failures count at once
}

// attemptFailed counts a failed attempt, or leaves it to its call's
// attempts when a WrapCalls above is still deciding.
func (t *Telemetry) attemptFailed(ctx context.Context, errType string) {
	if a, ok := ctx.Value(attemptsKey{}).(*attempts); ok {
		a.mu.Lock()
		defer a.mu.Unlock()
		if !a.settled {
			a.ctx, a.errType = ctx, errType
			return
		}
	}
	t.countUpstreamError(ctx, captureFrom(ctx), errType, "http", false)
}

// settle counts the pending failed attempt, sent again (retried) or the
// call's answer; a call that returned settles for good.
func (a *attempts) settle(t *Telemetry, retried bool) {
	a.mu.Lock()
	ctx, errType := a.ctx, a.errType
	a.ctx, a.errType = nil, ""
	a.settled = a.settled || !retried
	a.mu.Unlock()
	if errType != "" {
		t.countUpstreamError(ctx, captureFrom(ctx), errType, "http", retried)
	}
}

// clientSpan is one upstream call's span, ended once.
type clientSpan struct {
	t       *Telemetry
	ctx     context.Context
	span    trace.Span
	op      string
	start   time.Time
	errType string
	capture *capture
	stream  bool      // a capture's event stream: ended at Close
	endAt   time.Time // when the body ended, if it did
	readErr error
	done    atomic.Bool

	// The run's latest state and the agent service's latest ids, from
	// the run states that came on the response; finish puts them on the
	// span. Set as they came, each state grew the span's attributes,
	// which it keeps for the whole stream.
	mu          sync.Mutex
	thread, run string
	status      brainwire.RunStatus
	ended       bool
}

// runStatus records a run state that came on the response.
func (cs *clientSpan) runStatus(thread, run string, status brainwire.RunStatus) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.ended {
		return
	}
	if thread != "" {
		cs.thread = thread
	}
	if run != "" {
		cs.run = run
	}
	cs.status = status
}

// finish ends the span: errType marks a failed call, err is recorded.
func (cs *clientSpan) finish(errType string, err error) {
	if !cs.done.CompareAndSwap(false, true) {
		return
	}
	if cs.capture != nil {
		cs.capture.clearStream(cs)
	}
	cs.mu.Lock()
	cs.ended = true
	thread, run, status := cs.thread, cs.run, cs.status
	cs.mu.Unlock()
	if status != "" || thread != "" || run != "" {
		cs.span.SetAttributes(append(upstreamIDs(thread, run), AttrFoundryRunStatus.String(string(status)))...)
	}
	if errType != "" {
		cs.span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		msg := ""
		if err != nil {
			cs.span.RecordError(err)
			msg = err.Error()
		}
		cs.span.SetStatus(codes.Error, msg)
	}
	end := cs.endAt
	if end.IsZero() {
		end = time.Now()
	}
	cs.span.End(trace.WithTimestamp(end))
	if cs.capture != nil && cs.capture.shadow {
		return
	}
	var attrs []attribute.KeyValue
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	cs.t.inst.opDuration.Record(cs.ctx, end.Sub(cs.start).Seconds(),
		genaiconv.OperationNameAttr(cs.op), genaiconv.ProviderNameAttr(cs.t.agent.Provider), attrs...)
}

// spanBody ends its call's span when the body is read to its end, fails,
// or is closed. Reads pass straight through. A capture's event stream is
// ended at Close, stamped with the time the body ended: its reader may
// still be handing out events it read before the end, and their run
// status belongs on this span.
type spanBody struct {
	rc io.ReadCloser
	cs *clientSpan
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && !b.cs.done.Load() && b.cs.endAt.IsZero() {
		cs := b.cs
		cs.endAt = time.Now()
		if err != io.EOF {
			cs.readErr = err
			cs.errType = transportErrorType(cs.ctx, err)
			if cs.errType != "canceled" {
				cs.errType = "stream_broken"
				cs.t.countUpstreamError(cs.ctx, captureFrom(cs.ctx), cs.errType, "http", false)
			}
		}
		if !cs.stream {
			cs.finish(cs.errType, cs.readErr)
		}
	}
	return n, err
}

func (b *spanBody) Close() error {
	err := b.rc.Close()
	b.cs.finish(b.cs.errType, b.cs.readErr)
	return err
}

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// transportErrorType classifies a failed call or read.
func transportErrorType(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "timeout"
	}
	return "connection"
}

// redactURL drops credentials and every query parameter but api-version
// (a SAS signature or key must never reach a span).
func redactURL(u *url.URL) string {
	r := *u
	r.User = nil
	q := url.Values{}
	if v := u.Query().Get("api-version"); v != "" {
		q.Set("api-version", v)
	}
	r.RawQuery = q.Encode()
	r.Fragment = ""
	return r.String()
}

func hostPort(u *url.URL) (string, int) {
	host := u.Hostname()
	p, _ := strconv.Atoi(u.Port())
	if p == 0 {
		switch u.Scheme {
		case "https":
			p = 443
		case "http":
			p = 80
		}
	}
	return host, p
}

// method is m as a span's name and its http.request.method hold it: one
// of the known methods, else "HTTP" and "_OTHER", so that no one makes up
// span names.
func method(m string) (string, attribute.KeyValue) {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodHead, http.MethodOptions:
		return m, semconv.HTTPRequestMethodKey.String(m)
	}
	return "HTTP", semconv.HTTPRequestMethodOther
}
