// Package capturev2 encodes capture events for the phone's capture-v2 SSE
// contract: one `data: <json>\n\n` frame per event and nothing else. No
// `event:` lines (the phone's client would drop named frames) and no
// `retry:` lines (they would re-enable reconnection and file the capture
// twice).
package capturev2

import (
	"strconv"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/jsonw"
)

// Encoder encodes capture-v2 frames. The zero value is ready to use.
type Encoder struct{}

// Event types of capture-v2, as the phone parses them.
const (
	typeStepStart     = "STEP_START"
	typeStepEnd       = "STEP_END"
	typeClassified    = "CLASSIFIED"
	typeLowConfidence = "LOW_CONFIDENCE"
	typeMisunderstood = "MISUNDERSTOOD"
	typeUnresolved    = "UNRESOLVED"
	typeError         = "ERROR"
	typeComplete      = "COMPLETE"
)

// Encode appends the frame for ev to dst. Reasoning events are never part
// of the phone's stream: they append nothing.
func (Encoder) Encode(dst []byte, ev brainwire.CaptureEvent) []byte {
	switch ev.Type {
	case brainwire.CaptureStepStart:
		dst = open(dst, typeStepStart)
		dst = jsonw.Field(dst, "stepName", false)
		dst = jsonw.String(dst, ev.StepName)
	case brainwire.CaptureStepEnd:
		dst = open(dst, typeStepEnd)
		dst = jsonw.Field(dst, "stepName", false)
		dst = jsonw.String(dst, ev.StepName)
	case brainwire.CaptureOutcome:
		dst = outcome(dst, ev)
	case brainwire.CaptureError:
		dst = open(dst, typeError)
		dst = jsonw.Field(dst, "message", false)
		dst = jsonw.String(dst, ev.Message)
		if ev.Code != "" {
			dst = jsonw.Field(dst, "code", false)
			dst = jsonw.String(dst, ev.Code)
		}
		if n := ev.RetryAfterSeconds(); n > 0 {
			dst = jsonw.Field(dst, "retryAfterSeconds", false)
			dst = strconv.AppendInt(dst, n, 10)
		}
	case brainwire.CaptureComplete:
		dst = open(dst, typeComplete)
		dst = jsonw.Field(dst, "threadId", false)
		dst = jsonw.String(dst, ev.ThreadID)
		dst = jsonw.Field(dst, "runId", false)
		dst = jsonw.String(dst, ev.RunID)
	default:
		return dst
	}
	return append(dst, "}\n\n"...)
}

// open starts the frame of an event of type typ.
func open(dst []byte, typ string) []byte {
	dst = append(dst, `data: {"type":"`...)
	dst = append(dst, typ...)
	return append(dst, '"')
}

func outcome(dst []byte, ev brainwire.CaptureEvent) []byte {
	r := ev.Result
	switch r.Outcome {
	case brainwire.OutcomeClassified, brainwire.OutcomeLowConfidence:
		typ := typeClassified
		if r.Outcome == brainwire.OutcomeLowConfidence {
			typ = typeLowConfidence
		}
		dst = open(dst, typ)
		dst = append(dst, `,"value":{"inboxItemId":`...)
		dst = jsonw.String(dst, r.InboxItemID)
		dst = jsonw.Field(dst, "bucket", false)
		dst = jsonw.String(dst, r.Bucket)
		dst = jsonw.Field(dst, "confidence", false)
		dst = jsonw.Float(dst, r.Confidence)
	case brainwire.OutcomeMisunderstood:
		dst = open(dst, typeMisunderstood)
		dst = append(dst, `,"value":{"threadId":`...)
		dst = jsonw.String(dst, ev.ThreadID)
		dst = jsonw.Field(dst, "inboxItemId", false)
		dst = jsonw.String(dst, r.InboxItemID)
		dst = jsonw.Field(dst, "questionText", false)
		dst = jsonw.String(dst, r.Question)
		dst = jsonw.Field(dst, "foundryConversationId", false)
		dst = jsonw.String(dst, r.UpstreamThreadID)
	default:
		dst = open(dst, typeUnresolved)
		dst = append(dst, `,"value":{"inboxItemId":`...)
		dst = jsonw.String(dst, r.InboxItemID)
	}
	return append(dst, '}')
}
