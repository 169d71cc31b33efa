// Package capturev2 encodes capture events for the phone's capture-v2 SSE
// contract: one `data: <json>\n\n` frame per event and nothing else. No
// `event:` lines (the phone's client would drop named frames) and no
// `retry:` lines (they would re-enable reconnection and file the capture
// twice).
package capturev2

import (
	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/jsonw"
)

// Encoder encodes capture-v2 frames. The zero value is ready to use.
type Encoder struct{}

// Encode appends the frame for ev to dst. Reasoning events are never part
// of the phone's stream: they append nothing.
func (Encoder) Encode(dst []byte, ev brainwire.CaptureEvent) []byte {
	if ev.Type == brainwire.CaptureReasoning || ev.Type == 0 {
		return dst
	}
	dst = append(dst, "data: "...)
	dst = append(dst, `{"type":"`...)
	dst = append(dst, ev.Type.String()...)
	dst = append(dst, '"')
	switch ev.Type {
	case brainwire.CaptureStepStart, brainwire.CaptureStepEnd:
		dst = jsonw.Field(dst, "stepName", false)
		dst = jsonw.String(dst, ev.StepName)
	case brainwire.CaptureClassified, brainwire.CaptureLowConfidence:
		dst = append(dst, `,"value":{"inboxItemId":`...)
		dst = jsonw.String(dst, ev.Outcome.InboxItemID)
		dst = jsonw.Field(dst, "bucket", false)
		dst = jsonw.String(dst, ev.Outcome.Bucket)
		dst = jsonw.Field(dst, "confidence", false)
		dst = jsonw.Float(dst, ev.Outcome.Confidence)
		dst = append(dst, '}')
	case brainwire.CaptureMisunderstood:
		dst = append(dst, `,"value":{"threadId":`...)
		dst = jsonw.String(dst, ev.Outcome.ThreadID)
		dst = jsonw.Field(dst, "inboxItemId", false)
		dst = jsonw.String(dst, ev.Outcome.InboxItemID)
		dst = jsonw.Field(dst, "questionText", false)
		dst = jsonw.String(dst, ev.Outcome.QuestionText)
		dst = jsonw.Field(dst, "foundryConversationId", false)
		dst = jsonw.String(dst, ev.Outcome.FoundryConversationID)
		dst = append(dst, '}')
	case brainwire.CaptureUnresolved:
		dst = append(dst, `,"value":{"inboxItemId":`...)
		dst = jsonw.String(dst, ev.Outcome.InboxItemID)
		dst = append(dst, '}')
	case brainwire.CaptureError:
		dst = jsonw.Field(dst, "message", false)
		dst = jsonw.String(dst, ev.Message)
	case brainwire.CaptureComplete:
		dst = jsonw.Field(dst, "threadId", false)
		dst = jsonw.String(dst, ev.ThreadID)
		dst = jsonw.Field(dst, "runId", false)
		dst = jsonw.String(dst, ev.RunID)
	}
	return append(dst, "}\n\n"...)
}
