package telemetry

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"math"
	"strconv"
	"strings"
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
	"github.com/brainwire/brainwire/internal/textcut"
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
func (t *Telemetry) StartCapture(ctx context.Context, info brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	return t.startCapture(ctx, info, nil)
}

// startCapture starts a capture's span; production is set for a shadow
// run (StartShadow), whose span is a root linked to it and which records
// no metric and no Application Insights item.
func (t *Telemetry) startCapture(ctx context.Context, info brainwire.Capture, production *trace.SpanContext) (context.Context, brainwire.CaptureObserver) {
	shadow := production != nil
	c := &capture{t: t, info: info, start: time.Now(), shadow: shadow}
	if !shadow {
		c.ai = t.ai
	}
	c.kindAttr = AttrKind.String(string(info.Kind))
	// The capture's own agent (as the provider last described it, or as
	// an eval overrides it) wins over the one configured at start-up; a
	// shadow's is the candidate's.
	if info.Agent.Version == "" && !shadow {
		info.Agent.Version = t.agent.Version
		c.info.Agent.Version = info.Agent.Version
	}
	if v := info.Agent.Version; v != "" {
		c.versionAttr = []attribute.KeyValue{semconv.GenAIAgentVersion(v)}
	}
	if !shadow {
		t.declareVersion(info.Agent.Version, info.EvalRunID)
	}
	parent := trace.SpanContextFromContext(ctx)
	var attrs []attribute.KeyValue
	if t.tracing {
		attrs = make([]attribute.KeyValue, 0, 17)
		attrs = append(attrs,
			semconv.GenAIOperationNameInvokeAgent,
			semconv.GenAIProviderNameKey.String(t.agent.Provider),
			semconv.GenAIAgentName(t.agent.Name),
			AttrRunID.String(info.RunID),
			AttrThreadID.String(info.ThreadID),
			c.kindAttr,
		)
		if shadow {
			attrs = append(attrs, AttrShadow.Bool(true))
		}
		if id := cmp.Or(info.Agent.ID, t.agent.ID); id != "" {
			attrs = append(attrs, semconv.GenAIAgentID(id))
		}
		attrs = append(attrs, agentAttrs(info.Agent)...)
		if info.EvalRunID != "" {
			attrs = append(attrs, AttrEvalRunID.String(info.EvalRunID))
		}
		if up := info.UpstreamThreadID(); up != "" {
			attrs = append(attrs, semconv.GenAIConversationID(up), AttrFoundryThreadID.String(up))
		}
		if t.content {
			if info.Text != "" {
				attrs = append(attrs, semconv.GenAIInputMessagesKey.String(userMessages(info.Text)))
			}
			if in := info.Agent.Instructions; in != "" {
				attrs = append(attrs, semconv.GenAISystemInstructionsKey.String(t.systemInstructions(in)))
			}
		}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
	if shadow {
		opts = append(opts, trace.WithNewRoot())
		if production.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: *production}))
		}
	}
	ctx, c.span = t.tracer.Start(ctx, "invoke_agent "+t.agent.Name, opts...)
	c.recording = c.span.IsRecording()
	c.assemble = c.recording && t.content && t.maxText > 0
	sc := c.span.SpanContext()
	ref := brainwire.TraceRef{}
	if sc.IsValid() {
		ref = brainwire.TraceRef{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String()}
	}
	if c.ai != nil {
		c.op, c.requestID = t.aiOperation(ctx, sc, parent)
		// The run's Application Insights items hang under these ids,
		// which are the span's when there is one.
		ref = brainwire.TraceRef{TraceID: c.op.ID, SpanID: c.requestID}
	}
	if !ref.IsZero() {
		ctx = brainwire.WithRunTrace(ctx, ref)
	}
	c.ctx = ctx
	if !shadow {
		t.inst.active.Add(ctx, 1, metric.WithAttributes(c.kindAttr))
	}
	return context.WithValue(ctx, captureKey{}, c), c
}

// agentAttrs are the attributes naming which agent version ran.
func agentAttrs(a brainwire.AgentInfo) []attribute.KeyValue {
	var kv []attribute.KeyValue
	if a.Version != "" {
		kv = append(kv, semconv.GenAIAgentVersion(a.Version))
	}
	if a.Model != "" {
		kv = append(kv, semconv.GenAIRequestModel(a.Model))
	}
	return kv
}

// aiOperation correlates Application Insights items with the trace: the
// operation id is the trace id, and items hang under the invoke_agent
// span. Without tracing, ids are made up so items still group by capture.
func (t *Telemetry) aiOperation(ctx context.Context, sc, parent trace.SpanContext) (appinsights.Operation, string) {
	op := appinsights.Operation{Name: serverSpanName(ctx)}
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
	_, _ = rand.Read(b)
	b[0] |= 1
}

// The GenAI conventions' message JSON: a text part, and a message of
// parts.
type (
	textPart struct {
		Type    string `json:"type"`
		Content string `json:"content"`
		// Truncated marks content cut to the configured size.
		Truncated bool `json:"truncated,omitempty"`
	}
	message struct {
		Role         string     `json:"role"`
		Parts        []textPart `json:"parts"`
		FinishReason string     `json:"finish_reason,omitempty"`
	}
)

// userMessages renders the capture text as gen_ai.input.messages.
func userMessages(text string) string {
	return jsonString([]message{{Role: "user", Parts: []textPart{{Type: "text", Content: text}}}})
}

// renderedInstructions are instructions and their rendering.
type renderedInstructions struct{ text, parts string }

// systemInstructions renders instructions as gen_ai.system_instructions,
// once for as long as they stay the same.
func (t *Telemetry) systemInstructions(text string) string {
	if r := t.instructions.Load(); r != nil && r.text == text {
		return r.parts
	}
	r := &renderedInstructions{text: text, parts: jsonString([]textPart{{Type: "text", Content: text}})}
	t.instructions.Store(r)
	return r.parts
}

// outputMessages renders the run's assembled reasoning as
// gen_ai.output.messages: one assistant message, cut to the configured
// size with the part marked truncated.
func outputMessages(text string, truncated bool, finish string) string {
	return jsonString([]message{{Role: "assistant", Parts: []textPart{{Type: "text", Content: text, Truncated: truncated}}, FinishReason: finish}})
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// capture watches one capture. Its CaptureObserver methods run on the
// capture's goroutine; the upstream transport and tool wrappers reach it
// through the context from other goroutines and only touch mu's fields.
type capture struct {
	t         *Telemetry
	info      brainwire.Capture
	ctx       context.Context
	span      trace.Span
	recording bool
	start     time.Time
	kindAttr  attribute.KeyValue
	op        appinsights.Operation
	requestID string
	// shadow marks a shadow run: no production instrument counts it.
	shadow bool
	// ai is where its Application Insights items go: nil for none.
	ai *appinsights.Exporter

	chunks   []heldChunk            // reasoning chunks, until the span ends
	events   []heldEvent            // outcome events, until the span ends
	aiCommon []appinsights.Property // properties every chunk item shares
	aiRun    string
	aiThread string

	versionAttr []attribute.KeyValue // gen_ai.agent.version, when known

	// The run's reasoning assembled for one readable attribute, up to
	// the configured size.
	assemble  bool
	text      strings.Builder
	truncated bool

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

// ProviderEvent implements brainwire.CaptureObserver: upstream failures
// are counted, and each run state goes on the span of the upstream
// response it came on. It runs once per text chunk too, so the common case
// returns at once.
func (c *capture) ProviderEvent(ev brainwire.AgentEvent) {
	switch ev.Kind {
	case brainwire.AgentRunStatus:
		if ev.Status == brainwire.RunFailed {
			c.t.countUpstreamError(c.ctx, c, cmp.Or(ev.ErrorCode, "run_failed"), "run", false)
		}
		c.mu.Lock()
		cs := c.stream
		c.mu.Unlock()
		if cs != nil {
			cs.runStatus(ev.ThreadID, ev.RunID, ev.Status)
		}
	case brainwire.AgentError:
		c.t.countUpstreamError(c.ctx, c, cmp.Or(ev.ErrorCode, "stream_error"), "stream", false)
	}
}

// upstreamIDs are the attributes of the agent service's conversation and
// run ids.
func upstreamIDs(thread, run string) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 5)
	if thread != "" {
		kv = append(kv, semconv.GenAIConversationID(thread), AttrFoundryThreadID.String(thread))
	}
	if run != "" {
		kv = append(kv, semconv.GenAIResponseID(run), AttrFoundryRunID.String(run))
	}
	return kv
}

// CaptureEvent implements brainwire.CaptureObserver: reasoning chunks as
// they arrive, and an event marking the moment the phone got its outcome.
func (c *capture) CaptureEvent(ev brainwire.CaptureEvent) {
	switch ev.Type {
	case brainwire.CaptureReasoning:
		c.reasoning(&ev.Chunk)
	case brainwire.CaptureOutcome:
		if c.recording {
			r := ev.Result
			kv := []attribute.KeyValue{AttrOutcome.String(string(r.Outcome))}
			if r.Bucket != "" {
				kv = append(kv, AttrBucket.String(r.Bucket))
			}
			if r.HasConfidence() {
				kv = append(kv, AttrConfidence.Float64(r.Confidence))
			}
			c.events = append(c.events, heldEvent{at: time.Now(), attrs: kv})
		}
	case brainwire.CaptureError:
		if c.recording {
			c.events = append(c.events, heldEvent{at: time.Now(), attrs: []attribute.KeyValue{AttrOutcome.String(string(brainwire.OutcomeError)), AttrErrorMessage.String(ev.Message)}})
		}
	}
}

// reasoning records one chunk, as it arrives: held for the span (a span
// event when it ends), and an Application Insights trace item, neither of
// which waits on I/O.
func (c *capture) reasoning(ch *brainwire.ReasoningChunk) {
	if c.recording {
		var ids *chunkIDs // the last chunk's, while they stay the same
		if n := len(c.chunks); n > 0 {
			ids = c.chunks[n-1].ids
		}
		if ids == nil || ids.run != ch.RunID || ids.upstreamRun != ch.UpstreamRunID || ids.upstreamThread != ch.UpstreamThreadID {
			ids = &chunkIDs{run: ch.RunID, upstreamRun: ch.UpstreamRunID, upstreamThread: ch.UpstreamThreadID}
		}
		text := ch.Text
		if !c.t.content {
			text = ""
		}
		c.chunks = append(c.chunks, heldChunk{at: time.Now().UnixNano(), index: ch.Index, text: text, ids: ids})
	}
	if c.assemble && !c.truncated {
		c.appendText(ch.Text)
	}
	if c.ai != nil {
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
		c.ai.TrackTrace(appinsights.Trace{
			Time:       time.Now(),
			Message:    ReasoningChunkMessage,
			Severity:   contracts.Information,
			Operation:  appinsights.Operation{ID: c.op.ID, ParentID: c.requestID, Name: c.op.Name},
			Common:     c.aiCommon,
			Properties: props,
		})
	}
}

// heldChunk is a reasoning chunk until it becomes a span event, when the
// span ends: its time in Unix nanoseconds, index and text, and the ids it
// shares with the run's other chunks.
//
// A chunk as an SDK span event is an Event and a copy of its five
// attributes, some 400 bytes, against 40 here; the span holds its events
// until it ends either way, and only then are they exported. So the
// chunks are held here and added as events, with the times they came at,
// when the span ends. Measured with brainwire-load -n 300 -telemetry
// -profile (53 chunks per capture), three alternating runs, medians:
// events added as the chunks came, 83 KiB of live heap and 186 KiB of RSS
// per stream in flight; held here, 77 and 169 KiB.
type heldChunk struct {
	at    int64
	index int
	text  string
	ids   *chunkIDs
}

// chunkIDs are the capture's run id and the agent service's run and
// thread ids, which a run's chunks share.
type chunkIDs struct{ run, upstreamRun, upstreamThread string }

// heldEvent is an outcome event (EventOutcome) until the span ends.
type heldEvent struct {
	at    time.Time
	attrs []attribute.KeyValue
}

// addHeldEvents adds the chunks held, and the outcome's event among them,
// as the span's events in time order, each at the time it came.
func (c *capture) addHeldEvents() {
	var kv [5]attribute.KeyValue
	n := 4 // the text, last, only with content on
	if c.t.content {
		n = 5
	}
	events := c.events
	addOutcomes := func(before int64) {
		for len(events) > 0 && events[0].at.UnixNano() < before {
			c.span.AddEvent(EventOutcome, trace.WithTimestamp(events[0].at), trace.WithAttributes(events[0].attrs...))
			events = events[1:]
		}
	}
	for _, ch := range c.chunks {
		addOutcomes(ch.at)
		kv[0] = AttrRunID.String(ch.ids.run)
		kv[1] = AttrChunkIndex.Int(ch.index)
		kv[2] = AttrFoundryRunID.String(ch.ids.upstreamRun)
		kv[3] = AttrFoundryThreadID.String(ch.ids.upstreamThread)
		kv[4] = AttrReasoningText.String(ch.text)
		// The event copies its attributes, so kv serves every chunk.
		c.span.AddEvent(EventReasoningChunk, trace.WithTimestamp(time.Unix(0, ch.at)), trace.WithAttributes(kv[:n]...))
	}
	addOutcomes(math.MaxInt64)
	c.chunks, c.events = nil, nil
}

// appendText adds a chunk to the assembled reasoning, cutting it at the
// configured size on a character boundary.
func (c *capture) appendText(s string) {
	room := c.t.maxText - c.text.Len()
	if len(s) > room {
		s, c.truncated = textcut.Prefix(s, room), true
	}
	c.text.WriteString(s)
}

// End implements brainwire.CaptureObserver: it ends the invoke_agent span
// with the capture's result and records the capture's metrics.
func (c *capture) End(res brainwire.CaptureResult) {
	// An upstream response left open ends with the run.
	c.mu.Lock()
	cs := c.stream
	c.mu.Unlock()
	if cs != nil {
		cs.finish(cs.errType, cs.readErr)
	}
	end := time.Now()
	dur := end.Sub(c.start)
	if c.recording {
		c.addHeldEvents()
		kv := make([]attribute.KeyValue, 0, 20)
		kv = append(kv, AttrOutcome.String(string(res.Outcome)), AttrChunkCount.Int(res.ReasoningChunks),
			AttrTimeToOutcomeMS.Int64(res.TimeToOutcome.Milliseconds()))
		kv = append(kv, upstreamIDs(res.UpstreamThreadID, res.UpstreamRunID)...)
		// The bucket is there even when empty (an error, an unresolved
		// run): trace queries filter on it, and a condition on an
		// attribute a span lacks is false in TraceQL, even =~ ".*".
		kv = append(kv, AttrBucket.String(res.Bucket))
		if res.HasConfidence() {
			kv = append(kv, AttrConfidence.Float64(res.Confidence))
		}
		if res.InboxItemID != "" {
			kv = append(kv, AttrInboxItemID.String(res.InboxItemID))
		}
		if res.Question != "" && c.t.content {
			kv = append(kv, AttrQuestion.String(res.Question))
		}
		if res.HasUsage {
			kv = append(kv, semconv.GenAIUsageInputTokens(int(res.Usage.PromptTokens)), semconv.GenAIUsageOutputTokens(int(res.Usage.CompletionTokens)))
			if res.Usage.ReasoningTokens > 0 {
				kv = append(kv, semconv.GenAIUsageReasoningOutputTokens(int(res.Usage.ReasoningTokens)))
			}
		}
		if res.RunStatus != "" {
			kv = append(kv, AttrFoundryRunStatus.String(string(res.RunStatus)))
		}
		if c.assemble && c.text.Len() > 0 {
			finish := "stop"
			if res.ErrorType != "" {
				finish = "error"
			}
			kv = append(kv, semconv.GenAIOutputMessagesKey.String(outputMessages(c.text.String(), c.truncated, finish)))
			if c.truncated {
				kv = append(kv, AttrReasoningCut.Bool(true))
			}
		}
		if res.ErrorType != "" {
			kv = append(kv, semconv.ErrorTypeKey.String(res.ErrorType))
			msg := res.ErrorMessage
			if res.Err != nil {
				c.span.RecordError(res.Err)
				if msg == "" {
					msg = res.Err.Error()
				}
			}
			c.span.SetStatus(codes.Error, msg)
		}
		c.span.SetAttributes(kv...)
	}
	c.span.End(trace.WithTimestamp(end))
	if c.shadow {
		return
	}
	c.record(&res, dur)
	if c.ai != nil {
		c.trackRequest(&res, dur)
	}
}

// record records the capture's metrics. Every capture metric carries the
// agent version, so that dashboards compare instructions; the histograms
// are recorded in the capture's context, so that their exemplars point at
// its trace.
func (c *capture) record(res *brainwire.CaptureResult, dur time.Duration) {
	ctx, in, provider := c.ctx, &c.t.inst, genaiconv.ProviderNameAttr(c.t.agent.Provider)
	outcome := AttrOutcome.String(string(res.Outcome))
	kv := append([]attribute.KeyValue{outcome, c.kindAttr}, c.versionAttr...)
	base := kv
	if res.Bucket != "" {
		kv = append(kv[:len(kv):len(kv)], AttrBucket.String(res.Bucket))
	}
	in.captures.Add(ctx, 1, metric.WithAttributes(kv...))
	in.active.Add(ctx, -1, metric.WithAttributes(c.kindAttr))
	if res.HasConfidence() {
		in.confidence.Record(ctx, res.Confidence, metric.WithAttributes(kv...))
	}
	in.timeToOutcome.Record(ctx, res.TimeToOutcome.Seconds(), metric.WithAttributes(base...))
	in.chunks.Record(ctx, int64(res.ReasoningChunks), metric.WithAttributes(base...))
	opAttrs := agentAttrs(c.info.Agent)
	tokenAttrs := opAttrs
	if res.ErrorType != "" {
		opAttrs = append(opAttrs[:len(opAttrs):len(opAttrs)], semconv.ErrorTypeKey.String(res.ErrorType))
	}
	in.opDuration.Record(ctx, dur.Seconds(), genaiconv.OperationNameInvokeAgent, provider, opAttrs...)
	if res.HasUsage {
		in.tokens.Record(ctx, res.Usage.PromptTokens, genaiconv.OperationNameInvokeAgent, provider, genaiconv.TokenTypeInput, tokenAttrs...)
		in.tokens.Record(ctx, res.Usage.CompletionTokens, genaiconv.OperationNameInvokeAgent, provider, genaiconv.TokenTypeOutput, tokenAttrs...)
	}
}

func (c *capture) trackRequest(res *brainwire.CaptureResult, dur time.Duration) {
	ttoMS := res.TimeToOutcome.Milliseconds()
	props := []appinsights.Property{
		{Key: "run_id", Value: c.info.RunID},
		{Key: "thread_id", Value: c.info.ThreadID},
		{Key: "kind", Value: string(c.info.Kind)},
		{Key: "outcome", Value: string(res.Outcome)},
		{Key: "reasoning_chunks", Value: strconv.Itoa(res.ReasoningChunks)},
		{Key: "time_to_outcome_ms", Value: strconv.FormatInt(ttoMS, 10)},
		{Key: "agent_run_id", Value: res.UpstreamRunID},
		{Key: "agent_thread_id", Value: res.UpstreamThreadID},
		{Key: "agent_id", Value: cmp.Or(c.info.Agent.ID, c.t.agent.ID)},
		{Key: "agent_name", Value: c.t.agent.Name},
	}
	ms := []appinsights.Measurement{
		{Key: "reasoning_chunks", Value: float64(res.ReasoningChunks)},
		{Key: "time_to_outcome_ms", Value: float64(ttoMS)},
	}
	confidence, text, question := "", "", ""
	if res.HasConfidence() {
		confidence = strconv.FormatFloat(res.Confidence, 'f', -1, 64)
		ms = append(ms, appinsights.Measurement{Key: "confidence", Value: res.Confidence})
	}
	if c.t.content {
		text, question = c.info.Text, res.Question
	}
	if res.HasUsage {
		ms = append(ms, appinsights.Measurement{Key: "input_tokens", Value: float64(res.Usage.PromptTokens)},
			appinsights.Measurement{Key: "output_tokens", Value: float64(res.Usage.CompletionTokens)})
	}
	// The rest only when there is something to say.
	for _, p := range []appinsights.Property{
		{Key: "agent_version", Value: c.info.Agent.Version},
		{Key: "model", Value: c.info.Agent.Model},
		{Key: "eval_run_id", Value: c.info.EvalRunID},
		{Key: "bucket", Value: res.Bucket},
		{Key: "confidence", Value: confidence},
		{Key: "inbox_item_id", Value: res.InboxItemID},
		{Key: "error_type", Value: res.ErrorType},
		{Key: "error_message", Value: res.ErrorMessage},
		{Key: "capture_text", Value: text},
		{Key: "question", Value: question},
	} {
		if p.Value != "" {
			props = append(props, p)
		}
	}
	c.ai.TrackRequest(appinsights.Request{
		Time:         c.start,
		ID:           c.requestID,
		Name:         c.op.Name,
		Duration:     dur,
		ResponseCode: cmp.Or(res.ErrorType, "200"),
		Success:      res.ErrorType == "",
		Operation:    c.op,
		Properties:   props,
		Measurements: ms,
	})
}

// countUpstreamError counts one error from the agent service during
// capture c (nil: none known); retried when it was a failed attempt the
// retry layer sent again, so that the caller never saw it. A shadow run's
// are not production's errors: they are not counted.
func (t *Telemetry) countUpstreamError(ctx context.Context, c *capture, errType, source string, retried bool) {
	if c != nil && c.shadow {
		return
	}
	kv := []attribute.KeyValue{semconv.ErrorTypeKey.String(errType), AttrUpstreamErrSource.String(source), AttrUpstreamErrRetried.Bool(retried)}
	if c != nil {
		kv = append(kv, c.versionAttr...)
	}
	t.inst.upstreamErrs.Add(ctx, 1, metric.WithAttributes(kv...))
}
