package telemetry

import (
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
)

// Names of the upstream operations (span names and gen_ai.operation.name),
// in the style of the Azure AI Agents SDKs' own spans.
const (
	OpProcessThreadRun  = "process_thread_run"
	OpSubmitToolOutputs = "submit_tool_outputs"
	OpCancelRun         = "cancel_run"
	OpGetRun            = "get_run"
	OpListRuns          = "list_runs"
	OpCreateMessage     = "create_message"
	OpListMessages      = "list_messages"
	OpCreateThread      = "create_thread"
	OpGetThread         = "get_thread"
	OpGetAgent          = "get_agent"
)

// WrapTransport returns a RoundTripper that gives every call to the agent
// service a client span (named after the operation: process_thread_run,
// submit_tool_outputs, ...) under the span in the request's context, and
// sends the trace context upstream. A streamed answer's span ends when
// its body reaches its end or is closed; the body is passed through as it
// is read, never buffered. next nil means http.DefaultTransport.
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
	op, threadID, runID := upstreamOperation(req.Method, req.URL.Path)
	var attrs []attribute.KeyValue
	if t.tracing {
		attrs = make([]attribute.KeyValue, 0, 12)
		attrs = append(attrs,
			semconv.GenAIOperationNameKey.String(op),
			semconv.GenAIProviderNameKey.String(t.agent.Provider),
			httpMethod(req.Method),
			semconv.URLFull(redactURL(req.URL)),
		)
		if host, port := hostPort(req.URL); host != "" {
			attrs = append(attrs, semconv.ServerAddress(host))
			if port > 0 {
				attrs = append(attrs, semconv.ServerPort(port))
			}
		}
		if threadID != "" {
			attrs = append(attrs, semconv.GenAIConversationID(threadID), AttrFoundryThreadID.String(threadID))
		}
		if runID != "" {
			attrs = append(attrs, AttrFoundryRunID.String(runID))
		}
	}
	ctx, span := t.tracer.Start(req.Context(), op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	cs := &clientSpan{t: t, ctx: ctx, span: span, op: op, start: t.now(), capture: captureFrom(req.Context())}

	out := req.Clone(ctx)
	t.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := tr.next.RoundTrip(out)
	if err != nil {
		typ := transportErrorType(ctx, err)
		if typ != "canceled" {
			t.upstreamError(ctx, typ, "http")
		}
		cs.finish(typ, err)
		return nil, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if resp.StatusCode >= 400 {
		code := strconv.Itoa(resp.StatusCode)
		t.upstreamError(ctx, code, "http")
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
}

// finish ends the span: errType marks a failed call, err is recorded.
func (cs *clientSpan) finish(errType string, err error) {
	if !cs.done.CompareAndSwap(false, true) {
		return
	}
	if cs.capture != nil {
		cs.capture.clearStream(cs)
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
		end = cs.t.now()
	}
	cs.span.End(trace.WithTimestamp(end))
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
		cs.endAt = cs.t.now()
		if err != io.EOF {
			cs.readErr = err
			cs.errType = transportErrorType(cs.ctx, err)
			if cs.errType != "canceled" {
				cs.errType = "stream_broken"
				cs.t.upstreamError(cs.ctx, cs.errType, "http")
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

// upstreamOperation names a threads/runs API call by its method and path
// (after any /api/projects/<name> prefix) and returns the thread and run
// ids the path carries.
func upstreamOperation(method, path string) (op, threadID, runID string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	i := len(segs)
	for j, s := range segs {
		if s == "threads" || s == "assistants" {
			i = j
			break
		}
	}
	segs = segs[i:]
	get, post := method == http.MethodGet, method == http.MethodPost
	n := len(segs)
	switch {
	case n == 2 && segs[0] == "assistants" && get:
		return OpGetAgent, "", ""
	case n == 0 || segs[0] != "threads":
	case n == 1 && post:
		return OpCreateThread, "", ""
	case n == 2 && segs[1] == "runs" && post:
		return OpProcessThreadRun, "", ""
	case n == 2 && get:
		return OpGetThread, segs[1], ""
	case n == 3 && segs[2] == "runs" && post:
		return OpProcessThreadRun, segs[1], ""
	case n == 3 && segs[2] == "runs" && get:
		return OpListRuns, segs[1], ""
	case n == 3 && segs[2] == "messages" && post:
		return OpCreateMessage, segs[1], ""
	case n == 3 && segs[2] == "messages" && get:
		return OpListMessages, segs[1], ""
	case n == 4 && segs[2] == "runs" && get:
		return OpGetRun, segs[1], segs[3]
	case n == 5 && segs[2] == "runs" && segs[4] == "submit_tool_outputs" && post:
		return OpSubmitToolOutputs, segs[1], segs[3]
	case n == 5 && segs[2] == "runs" && segs[4] == "cancel" && post:
		return OpCancelRun, segs[1], segs[3]
	}
	if method == "" {
		return "HTTP", "", ""
	}
	return method, "", ""
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

var knownMethods = map[string]attribute.KeyValue{
	http.MethodGet:     semconv.HTTPRequestMethodGet,
	http.MethodPost:    semconv.HTTPRequestMethodPost,
	http.MethodPut:     semconv.HTTPRequestMethodPut,
	http.MethodPatch:   semconv.HTTPRequestMethodPatch,
	http.MethodDelete:  semconv.HTTPRequestMethodDelete,
	http.MethodHead:    semconv.HTTPRequestMethodHead,
	http.MethodOptions: semconv.HTTPRequestMethodOptions,
}

// httpMethod keeps the method attribute to the known set.
func httpMethod(m string) attribute.KeyValue {
	if kv, ok := knownMethods[m]; ok {
		return kv
	}
	return semconv.HTTPRequestMethodOther
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
