package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainwire/brainwire"
)

// WrapTools returns a tool set that runs each call of set inside an
// "execute_tool <name>" span, child of the span in the call's context
// (invoke_agent), with the call's arguments and result when content is
// recorded. A result with IsError marks the span as failed.
func (t *Telemetry) WrapTools(set brainwire.ToolSet) brainwire.ToolSet {
	if set == nil {
		return nil
	}
	return &toolSet{t: t, next: set}
}

type toolSet struct {
	t    *Telemetry
	next brainwire.ToolSet
}

func (s *toolSet) Definitions() []brainwire.ToolDefinition { return s.next.Definitions() }

func (s *toolSet) Call(ctx context.Context, call brainwire.ToolCall) (res brainwire.ToolResult) {
	t := s.t
	var attrs []attribute.KeyValue
	if t.tracing {
		attrs = []attribute.KeyValue{
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIProviderNameKey.String(t.agent.Provider),
			semconv.GenAIToolName(call.Name),
			semconv.GenAIToolCallID(call.ID),
			semconv.GenAIToolType("function"),
		}
		if call.ThreadID != "" {
			attrs = append(attrs, AttrFoundryThreadID.String(call.ThreadID))
		}
		if call.RunID != "" {
			attrs = append(attrs, AttrFoundryRunID.String(call.RunID))
		}
		if t.content {
			attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(redactSAS(string(call.Arguments))))
		}
	}
	ctx, span := t.tracer.Start(ctx, "execute_tool "+call.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	start := time.Now()
	finished := false
	defer func() {
		if finished {
			return
		}
		// The tool panicked: record it and let the panic go on to the
		// provider, which turns it into an error result.
		v := recover()
		span.SetAttributes(semconv.ErrorTypeKey.String("panic"))
		span.SetStatus(codes.Error, fmt.Sprint(v))
		span.End()
		s.record(ctx, start, call.Name, "panic")
		panic(v)
	}()
	res = s.next.Call(ctx, call)
	finished = true
	errType := ""
	if res.IsError {
		errType = toolErrorType(res.Output)
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	if t.content && t.tracing {
		span.SetAttributes(semconv.GenAIToolCallResultKey.String(redactSAS(res.Output)))
	}
	span.End()
	s.record(ctx, start, call.Name, errType)
	return res
}

// record adds the call to gen_ai.client.operation.duration, by tool and
// the capture's agent version, so that tool errors show per tool and
// version; a shadow run's calls are not production's and are not counted.
func (s *toolSet) record(ctx context.Context, start time.Time, tool, errType string) {
	attrs := []attribute.KeyValue{semconv.GenAIToolName(tool)}
	if c := captureFrom(ctx); c != nil {
		if c.shadow {
			return
		}
		attrs = append(attrs, c.versionAttr...)
	}
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	s.t.inst.opDuration.Record(ctx, time.Now().Sub(start).Seconds(), genaiconv.OperationNameExecuteTool,
		genaiconv.ProviderNameAttr(s.t.agent.Provider), attrs...)
}

// toolErrorType reads the error code a tool put in its output
// ({"error":"invalid_bucket",...}), or says tool_error.
func toolErrorType(output string) string {
	var v struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(output), &v) == nil && v.Error != "" && len(v.Error) <= 64 {
		return v.Error
	}
	return "tool_error"
}

// sasSignature matches the signature of a shared access signature in a URL
// (an audio blob's, in transcribe_audio's arguments).
var sasSignature = regexp.MustCompile(`([?&](?:amp;)?sig=)[^&"'\s\\]+`)

// redactSAS hides SAS signatures: content capture records what the agent
// said, never a credential.
func redactSAS(s string) string {
	if !strings.Contains(s, "sig=") {
		return s
	}
	return sasSignature.ReplaceAllString(s, "${1}REDACTED")
}
