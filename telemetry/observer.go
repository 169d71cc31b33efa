package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/microsoft/ApplicationInsights-Go/appinsights/contracts"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/telemetry/appinsights"
)

// Span event names.
const (
	EventReasoningChunk = "reasoning.chunk"
	EventOutcome        = "brainwire.capture.outcome"
)

// ReasoningChunkMessage is the message of the Application Insights trace
// item sent for each reasoning chunk.
const ReasoningChunkMessage = "Reasoning chunk"

// Outcome values of the brainwire.capture.outcome attribute.
const (
	OutcomeClassified    = "classified"
	OutcomeLowConfidence = "low_confidence"
	OutcomeMisunderstood = "misunderstood"
	OutcomeUnresolved    = "unresolved"
	OutcomeError         = "error"
)

var _ brainwire.Observer = (*Telemetry)(nil)

type captureKey struct{}

// captureFrom returns the capture a context belongs to, or nil.
func captureFrom(ctx context.Context) *capture {
	c, _ := ctx.Value(captureKey{}).(*capture)
	return c
}

// StartCapture implements brainwire.Observer: it starts the invoke_agent
// span, child of the HTTP server span in ctx, and returns a context that
// carries it to the upstream calls and tool calls of the capture.
func (t *Telemetry) StartCapture(ctx context.Context, info brainwire.CaptureInfo) (context.Context, brainwire.CaptureObserver) {
	c := &capture{t: t, info: info, start: t.now(), upThread: info.UpstreamThreadID}
	c.kindAttr = AttrKind.String(string(info.Kind))
	parent := trace.SpanContextFromContext(ctx)
	var attrs []attribute.KeyValue
	if t.tracing {
		attrs = make([]attribute.KeyValue, 0, 12)
		attrs = append(attrs,
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIProviderNameKey.String(t.agent.Provider),
			semconv.GenAIAgentName(t.agent.Name),
			AttrRunID.String(info.RunID),
			AttrThreadID.String(info.ThreadID),
			c.kindAttr,
		)
		if t.agent.ID != "" {
			attrs = append(attrs, semconv.GenAIAgentID(t.agent.ID))
		}
		if info.UpstreamThreadID != "" {
			attrs = append(attrs, semconv.GenAIConversationID(info.UpstreamThreadID), AttrFoundryThreadID.String(info.UpstreamThreadID))
		}
		if t.content && info.Text != "" {
			attrs = append(attrs, semconv.GenAIInputMessagesKey.String(userMessages(info.Text)))
		}
	}
	ctx, c.span = t.tracer.Start(ctx, "invoke_agent "+t.agent.Name,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	c.recording = c.span.IsRecording()
	c.ctx = ctx
	if t.ai != nil {
		c.op, c.requestID = t.aiOperation(ctx, c.span.SpanContext(), parent)
	}
	t.inst.active.Add(ctx, 1, metric.WithAttributes(c.kindAttr))
	return context.WithValue(ctx, captureKey{}, c), c
}

// aiOperation correlates Application Insights items with the trace: the
// operation id is the trace id, and items hang under the invoke_agent
// span. Without tracing, ids are made up so items still group by capture.
func (t *Telemetry) aiOperation(ctx context.Context, sc, parent trace.SpanContext) (appinsights.Operation, string) {
	op := appinsights.Operation{Name: routeFrom(ctx)}
	if op.Name == "" {
		op.Name = "invoke_agent " + t.agent.Name
	}
	if sc.TraceID().IsValid() {
		op.ID = sc.TraceID().String()
	} else {
		var id trace.TraceID
		putRandom(id[:])
		op.ID = id.String()
	}
	reqID := ""
	if sc.IsValid() && sc.SpanID() != parent.SpanID() {
		reqID = sc.SpanID().String()
	} else {
		var id trace.SpanID
		putRandom(id[:])
		reqID = id.String()
	}
	if parent.IsValid() {
		op.ParentID = parent.SpanID().String()
	}
	return op, reqID
}

// putRandom fills b with random bytes, never all zero (an invalid id).
func putRandom(b []byte) {
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	b[0] |= 1
}

// userMessages renders the capture text as gen_ai.input.messages.
func userMessages(text string) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	b, _ := json.Marshal([]message{{Role: "user", Parts: []part{{Type: "text", Content: text}}}})
	return string(b)
}

// capture watches one capture. Its CaptureObserver methods run on the
// capture's goroutine; the upstream transport and tool wrappers reach it
// through the context from other goroutines and only touch mu's fields.
type capture struct {
	t         *Telemetry
	info      brainwire.CaptureInfo
	ctx       context.Context
	span      trace.Span
	recording bool
	start     time.Time
	kindAttr  attribute.KeyValue
	op        appinsights.Operation
	requestID string

	chunks        int
	upThread      string
	upRun         string
	status        brainwire.RunStatus
	inTokens      int64
	outTokens     int64
	usage         bool
	outcome       string
	outcomeAfter  time.Duration
	bucket        string
	confidence    float64
	hasConfidence bool
	itemID        string
	question      string
	errMessage    string
	upstreamErr   string // error.type of an in-stream failure

	chunkAttrs [5]attribute.KeyValue
	aiCommon   []appinsights.Property // properties every chunk item shares
	aiRun      string
	aiThread   string

	mu     sync.Mutex
	stream *clientSpan // the upstream response being read, if any
}

func (c *capture) setStream(cs *clientSpan) {
	c.mu.Lock()
	c.stream = cs
	c.mu.Unlock()
}

func (c *capture) clearStream(cs *clientSpan) {
	c.mu.Lock()
	if c.stream == cs {
		c.stream = nil
	}
	c.mu.Unlock()
}

// ProviderEvent implements brainwire.CaptureObserver. It runs once per
// text chunk too, so the common case does two comparisons and returns.
func (c *capture) ProviderEvent(ev brainwire.Event) {
	changed := false
	if ev.ThreadID != "" && ev.ThreadID != c.upThread {
		c.upThread, changed = ev.ThreadID, true
	}
	if ev.RunID != "" && ev.RunID != c.upRun {
		c.upRun, changed = ev.RunID, true
	}
	if changed && c.recording {
		c.span.SetAttributes(c.upstreamIDs()...)
	}
	switch ev.Kind {
	case brainwire.EventTextChunk:
		return
	case brainwire.EventUsage:
		c.inTokens += ev.Usage.PromptTokens
		c.outTokens += ev.Usage.CompletionTokens
		c.usage = true
	case brainwire.EventRunStatus:
		c.status = ev.Status
		if ev.Status == brainwire.RunFailed {
			c.upstreamErr = orDefault(ev.ErrorCode, "run_failed")
			c.t.upstreamError(c.ctx, c.upstreamErr, "run")
		}
		c.mu.Lock()
		cs := c.stream
		c.mu.Unlock()
		if cs != nil {
			cs.span.SetAttributes(append(c.upstreamIDs(), AttrFoundryRunStatus.String(string(ev.Status)))...)
		}
	case brainwire.EventError:
		c.upstreamErr = orDefault(ev.ErrorCode, "stream_error")
		c.t.upstreamError(c.ctx, c.upstreamErr, "stream")
	}
}

func (c *capture) upstreamIDs() []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 4)
	if c.upThread != "" {
		kv = append(kv, semconv.GenAIConversationID(c.upThread), AttrFoundryThreadID.String(c.upThread))
	}
	if c.upRun != "" {
		kv = append(kv, semconv.GenAIResponseID(c.upRun), AttrFoundryRunID.String(c.upRun))
	}
	return kv
}

// CaptureEvent implements brainwire.CaptureObserver.
func (c *capture) CaptureEvent(ev brainwire.CaptureEvent) {
	switch ev.Type {
	case brainwire.CaptureReasoning:
		c.reasoning(&ev.Chunk)
	case brainwire.CaptureClassified, brainwire.CaptureLowConfidence, brainwire.CaptureMisunderstood, brainwire.CaptureUnresolved:
		if c.outcome != "" {
			return
		}
		c.outcome = outcomeName(ev.Type)
		c.outcomeAfter = c.t.now().Sub(c.start)
		o := ev.Outcome
		c.bucket, c.itemID, c.question = o.Bucket, o.InboxItemID, o.QuestionText
		c.confidence, c.hasConfidence = o.Confidence, ev.Type != brainwire.CaptureUnresolved
		if c.recording {
			kv := []attribute.KeyValue{AttrOutcome.String(c.outcome)}
			if c.bucket != "" {
				kv = append(kv, AttrBucket.String(c.bucket))
			}
			if c.hasConfidence {
				kv = append(kv, AttrConfidence.Float64(c.confidence))
			}
			c.span.AddEvent(EventOutcome, trace.WithAttributes(kv...))
		}
	case brainwire.CaptureError:
		if c.outcome != "" {
			return
		}
		c.outcome = OutcomeError
		c.outcomeAfter = c.t.now().Sub(c.start)
		c.errMessage = ev.Message
		if c.recording {
			c.span.AddEvent(EventOutcome, trace.WithAttributes(AttrOutcome.String(OutcomeError), AttrErrorMessage.String(ev.Message)))
		}
	}
}

// reasoning records one chunk, as it arrives: a span event and an
// Application Insights trace item, neither of which waits on I/O.
func (c *capture) reasoning(ch *brainwire.ReasoningChunk) {
	c.chunks++
	if c.recording {
		// The event config copies the attributes, so one buffer per
		// capture serves every chunk.
		kv := &c.chunkAttrs
		kv[0] = AttrRunID.String(ch.RunID)
		kv[1] = AttrChunkIndex.Int(ch.Index)
		kv[2] = AttrFoundryRunID.String(ch.UpstreamRunID)
		kv[3] = AttrFoundryThreadID.String(ch.UpstreamThreadID)
		n := 4
		if c.t.content {
			kv[4] = AttrReasoningText.String(ch.Text)
			n = 5
		}
		c.span.AddEvent(EventReasoningChunk, trace.WithAttributes(kv[:n]...))
	}
	if c.t.ai != nil {
		if c.aiCommon == nil || ch.UpstreamRunID != c.aiRun || ch.UpstreamThreadID != c.aiThread {
			// Queued items keep the old slice; a new one is made.
			c.aiRun, c.aiThread = ch.UpstreamRunID, ch.UpstreamThreadID
			c.aiCommon = []appinsights.Property{
				{Key: "run_id", Value: ch.RunID},
				{Key: "thread_id", Value: c.info.ThreadID},
				{Key: "agent_run_id", Value: ch.UpstreamRunID},
				{Key: "agent_thread_id", Value: ch.UpstreamThreadID},
			}
		}
		props := make([]appinsights.Property, 1, 2)
		props[0] = appinsights.Property{Key: "chunk_index", Value: strconv.Itoa(ch.Index)}
		if c.t.content {
			props = append(props, appinsights.Property{Key: "reasoning_text", Value: ch.Text})
		}
		c.t.ai.TrackTrace(appinsights.Trace{
			Time:       c.t.now(),
			Message:    ReasoningChunkMessage,
			Severity:   contracts.Information,
			Operation:  appinsights.Operation{ID: c.op.ID, ParentID: c.requestID, Name: c.op.Name},
			Common:     c.aiCommon,
			Properties: props,
		})
	}
}

// End implements brainwire.CaptureObserver: it ends the invoke_agent span
// with the outcome attributes and records the capture's metrics.
func (c *capture) End(err error) {
	// An upstream response left open ends with the run.
	c.mu.Lock()
	cs := c.stream
	c.mu.Unlock()
	if cs != nil {
		cs.finish(cs.errType, cs.readErr)
	}
	end := c.t.now()
	dur := end.Sub(c.start)
	if c.outcome == "" {
		c.outcome = OutcomeError
		c.outcomeAfter = dur
	}
	errType := ""
	switch {
	case err != nil:
		errType = errorType(err)
	case c.outcome == OutcomeError:
		errType = orDefault(c.upstreamErr, "capture_error")
	}
	ttoMS := c.outcomeAfter.Milliseconds()

	if c.recording {
		kv := make([]attribute.KeyValue, 0, 16)
		kv = append(kv, AttrOutcome.String(c.outcome), AttrChunkCount.Int(c.chunks), AttrTimeToOutcomeMS.Int64(ttoMS))
		if c.bucket != "" {
			kv = append(kv, AttrBucket.String(c.bucket))
		}
		if c.hasConfidence {
			kv = append(kv, AttrConfidence.Float64(c.confidence))
		}
		if c.itemID != "" {
			kv = append(kv, AttrInboxItemID.String(c.itemID))
		}
		if c.question != "" && c.t.content {
			kv = append(kv, AttrQuestion.String(c.question))
		}
		if c.usage {
			kv = append(kv, semconv.GenAIUsageInputTokens(int(c.inTokens)), semconv.GenAIUsageOutputTokens(int(c.outTokens)))
		}
		if c.status != "" {
			kv = append(kv, AttrFoundryRunStatus.String(string(c.status)))
		}
		if errType != "" {
			kv = append(kv, semconv.ErrorTypeKey.String(errType))
			msg := c.errMessage
			if err != nil {
				c.span.RecordError(err)
				if msg == "" {
					msg = err.Error()
				}
			}
			c.span.SetStatus(codes.Error, msg)
		}
		c.span.SetAttributes(kv...)
	}
	c.span.End(trace.WithTimestamp(end))
	c.record(dur, errType)
	if c.t.ai != nil {
		c.trackRequest(dur, errType, ttoMS)
	}
}

func (c *capture) record(dur time.Duration, errType string) {
	ctx, in, provider := c.ctx, &c.t.inst, genaiconv.ProviderNameAttr(c.t.agent.Provider)
	outcome := AttrOutcome.String(c.outcome)
	kv := []attribute.KeyValue{outcome, c.kindAttr}
	if c.bucket != "" {
		kv = append(kv, AttrBucket.String(c.bucket))
	}
	in.captures.Add(ctx, 1, metric.WithAttributes(kv...))
	in.active.Add(ctx, -1, metric.WithAttributes(c.kindAttr))
	if c.hasConfidence {
		in.confidence.Record(ctx, c.confidence, metric.WithAttributes(kv...))
	}
	in.timeToOutcome.Record(ctx, c.outcomeAfter.Seconds(), metric.WithAttributes(outcome, c.kindAttr))
	in.chunks.Record(ctx, int64(c.chunks), metric.WithAttributes(outcome, c.kindAttr))
	var opAttrs []attribute.KeyValue
	if errType != "" {
		opAttrs = append(opAttrs, semconv.ErrorTypeKey.String(errType))
	}
	in.opDuration.Record(ctx, dur.Seconds(), genaiconv.OperationNameInvokeAgent, provider, opAttrs...)
	if c.usage {
		in.tokens.Record(ctx, c.inTokens, genaiconv.OperationNameInvokeAgent, provider, genaiconv.TokenTypeInput)
		in.tokens.Record(ctx, c.outTokens, genaiconv.OperationNameInvokeAgent, provider, genaiconv.TokenTypeOutput)
	}
}

func (c *capture) trackRequest(dur time.Duration, errType string, ttoMS int64) {
	props := []appinsights.Property{
		{Key: "run_id", Value: c.info.RunID},
		{Key: "thread_id", Value: c.info.ThreadID},
		{Key: "kind", Value: string(c.info.Kind)},
		{Key: "outcome", Value: c.outcome},
		{Key: "reasoning_chunks", Value: strconv.Itoa(c.chunks)},
		{Key: "time_to_outcome_ms", Value: strconv.FormatInt(ttoMS, 10)},
		{Key: "agent_run_id", Value: c.upRun},
		{Key: "agent_thread_id", Value: c.upThread},
		{Key: "agent_id", Value: c.t.agent.ID},
		{Key: "agent_name", Value: c.t.agent.Name},
	}
	ms := []appinsights.Measurement{
		{Key: "reasoning_chunks", Value: float64(c.chunks)},
		{Key: "time_to_outcome_ms", Value: float64(ttoMS)},
	}
	if c.bucket != "" {
		props = append(props, appinsights.Property{Key: "bucket", Value: c.bucket})
	}
	if c.hasConfidence {
		props = append(props, appinsights.Property{Key: "confidence", Value: strconv.FormatFloat(c.confidence, 'f', -1, 64)})
		ms = append(ms, appinsights.Measurement{Key: "confidence", Value: c.confidence})
	}
	if c.itemID != "" {
		props = append(props, appinsights.Property{Key: "inbox_item_id", Value: c.itemID})
	}
	if c.usage {
		ms = append(ms, appinsights.Measurement{Key: "input_tokens", Value: float64(c.inTokens)},
			appinsights.Measurement{Key: "output_tokens", Value: float64(c.outTokens)})
	}
	if errType != "" {
		props = append(props, appinsights.Property{Key: "error_type", Value: errType})
		if c.errMessage != "" {
			props = append(props, appinsights.Property{Key: "error_message", Value: c.errMessage})
		}
	}
	if c.t.content {
		if c.info.Text != "" {
			props = append(props, appinsights.Property{Key: "capture_text", Value: c.info.Text})
		}
		if c.question != "" {
			props = append(props, appinsights.Property{Key: "question", Value: c.question})
		}
	}
	code := "200"
	if errType != "" {
		code = errType
	}
	c.t.ai.TrackRequest(appinsights.Request{
		Time:         c.start,
		ID:           c.requestID,
		Name:         c.op.Name,
		Duration:     dur,
		ResponseCode: code,
		Success:      errType == "",
		Operation:    c.op,
		Properties:   props,
		Measurements: ms,
	})
}

func outcomeName(t brainwire.CaptureEventType) string {
	switch t {
	case brainwire.CaptureClassified:
		return OutcomeClassified
	case brainwire.CaptureLowConfidence:
		return OutcomeLowConfidence
	case brainwire.CaptureMisunderstood:
		return OutcomeMisunderstood
	}
	return OutcomeUnresolved
}

// errorType is the error.type of a run's error: cancellations and
// timeouts by name, else the application error code.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return brainwire.ErrorCode(err)
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// upstreamError counts one error from the agent service.
func (t *Telemetry) upstreamError(ctx context.Context, errType, source string) {
	t.inst.upstreamErrs.Add(ctx, 1, metric.WithAttributes(semconv.ErrorTypeKey.String(errType), AttrUpstreamErrSource.String(source)))
}
