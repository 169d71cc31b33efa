package replay

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/brainwire/brainwire"
)

// Summary is what telemetry should say about a capture, gathered from the
// events the capture pipeline hands its observers: the outcome attributes,
// the reasoning chunks (count and indices: telemetry must number them
// 0, 1, 2, ... with none lost), the tool calls and the upstream run's
// states. Spans is filled when a telemetry pipeline ran alongside.
type Summary struct {
	Kind            brainwire.CaptureKind
	Outcome         brainwire.Outcome
	Bucket          string
	Confidence      float64
	HasConfidence   bool
	ErrorMessage    string // the ERROR event's message
	ReasoningChunks int
	ChunkIndices    []int
	ChunkRunIDs     []string // distinct run_id values on the chunks
	Tools           []string
	Statuses        []string // upstream run states, repeats folded
	Usage           brainwire.Usage
	RunError        string // the run's error, as the server logged it
	Spans           []string
}

// Text renders the summary as the telemetry golden file holds it: one
// fact per line, so a regression shows as a changed line.
func (s Summary) Text() []byte {
	var b strings.Builder
	line := func(k, v string) {
		if v == "" {
			v = "-"
		}
		b.WriteString(k + ": " + v + "\n")
	}
	line("kind", string(s.Kind))
	line("outcome", string(s.Outcome))
	line("bucket", s.Bucket)
	confidence, usage := "", ""
	if s.HasConfidence {
		confidence = strconv.FormatFloat(s.Confidence, 'f', -1, 64)
	}
	if u := s.Usage; u != (brainwire.Usage{}) {
		usage = fmt.Sprintf("prompt=%d completion=%d total=%d", u.PromptTokens, u.CompletionTokens, u.TotalTokens)
		if u.ReasoningTokens > 0 {
			usage += fmt.Sprintf(" reasoning=%d", u.ReasoningTokens)
		}
	}
	line("confidence", confidence)
	line("error_message", s.ErrorMessage)
	line("reasoning_chunks", strconv.Itoa(s.ReasoningChunks))
	line("reasoning_chunk_indices", ranges(s.ChunkIndices))
	line("reasoning_run_id", strings.Join(s.ChunkRunIDs, ", "))
	line("upstream_run_states", strings.Join(s.Statuses, " > "))
	line("usage_tokens", usage)
	line("run_error", s.RunError)
	b.WriteString("tool_calls:\n")
	for _, t := range s.Tools {
		b.WriteString("  " + t + "\n")
	}
	if len(s.Spans) > 0 {
		b.WriteString("spans:\n")
		for _, sp := range s.Spans {
			b.WriteString("  " + sp + "\n")
		}
	}
	return []byte(b.String())
}

// ranges writes 0,1,2,3,7 as "0-3, 7".
func ranges(xs []int) string {
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// summaryObserver gathers a Summary from the captures it watches.
type summaryObserver struct {
	mu sync.Mutex
	s  Summary
}

// StartCapture implements brainwire.Observer.
func (o *summaryObserver) StartCapture(ctx context.Context, c brainwire.Capture) (context.Context, brainwire.CaptureObserver) {
	o.mu.Lock()
	o.s = Summary{Kind: c.Kind}
	o.mu.Unlock()
	return ctx, o
}

// ProviderEvent implements brainwire.CaptureObserver.
func (o *summaryObserver) ProviderEvent(ev brainwire.AgentEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch ev.Kind {
	case brainwire.AgentRunStatus:
		st := string(ev.Status)
		if ev.Status == brainwire.RunFailed && ev.ErrorCode != "" {
			st += " (" + ev.ErrorCode + ")"
		}
		if n := len(o.s.Statuses); n == 0 || o.s.Statuses[n-1] != st {
			o.s.Statuses = append(o.s.Statuses, st)
		}
	case brainwire.AgentError:
		o.s.Statuses = append(o.s.Statuses, "error event")
	case brainwire.AgentToolResult:
		res := "ok"
		if ev.Result.IsError {
			res = "error " + ev.Result.ErrorCode
		}
		o.s.Tools = append(o.s.Tools, fmt.Sprintf("%s %s: %s", ev.Tool.Name, ev.Tool.ID, res))
	}
}

// CaptureEvent implements brainwire.CaptureObserver: the reasoning
// chunks' numbering, as telemetry receives it.
func (o *summaryObserver) CaptureEvent(ev brainwire.CaptureEvent) {
	if ev.Type != brainwire.CaptureReasoning {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.s.ChunkIndices = append(o.s.ChunkIndices, ev.Chunk.Index)
	if !slices.Contains(o.s.ChunkRunIDs, ev.Chunk.RunID) {
		o.s.ChunkRunIDs = append(o.s.ChunkRunIDs, ev.Chunk.RunID)
	}
}

// End implements brainwire.CaptureObserver.
func (o *summaryObserver) End(res brainwire.CaptureResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := &o.s
	s.Outcome, s.Bucket, s.ErrorMessage = res.Outcome, res.Bucket, res.ErrorMessage
	s.Confidence, s.HasConfidence = res.Confidence, res.HasConfidence()
	s.ReasoningChunks = res.ReasoningChunks
	if res.HasUsage {
		s.Usage = res.Usage
	}
	if res.Err != nil {
		s.RunError = addrPattern.ReplaceAllString(res.Err.Error(), "<addr>")
	}
}

// addrPattern matches network addresses, which differ between runs (the
// upstream's loopback port).
var addrPattern = regexp.MustCompile(`(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]|localhost):\d+`)
