package responses

// eventType is a stream event type the decoder acts on. Every other type
// (content parts, summary parts, ".done" texts, argument deltas,
// annotations, built-in tool progress, ...) is skipped: what those say
// arrives again, whole, in the events below.
type eventType uint8

const (
	eventUnknown eventType = iota
	eventCreated
	eventQueued
	eventInProgress
	eventCompleted
	eventFailed
	eventIncomplete
	eventOutputTextDelta
	eventReasoningSummaryDelta
	eventReasoningTextDelta
	eventRefusalDelta
	eventOutputItemDone
	eventError
)

// The stream event types, as the API names them in the event: line and in
// data.type.
const (
	TypeCreated                = "response.created"
	TypeQueued                 = "response.queued"
	TypeInProgress             = "response.in_progress"
	TypeCompleted              = "response.completed"
	TypeFailed                 = "response.failed"
	TypeIncomplete             = "response.incomplete"
	TypeOutputTextDelta        = "response.output_text.delta"
	TypeReasoningSummaryDelta  = "response.reasoning_summary_text.delta"
	TypeReasoningTextDelta     = "response.reasoning_text.delta"
	TypeRefusalDelta           = "response.refusal.delta"
	TypeOutputItemAdded        = "response.output_item.added"
	TypeOutputItemDone         = "response.output_item.done"
	TypeContentPartAdded       = "response.content_part.added"
	TypeContentPartDone        = "response.content_part.done"
	TypeOutputTextDone         = "response.output_text.done"
	TypeReasoningSummaryAdded  = "response.reasoning_summary_part.added"
	TypeReasoningSummaryDone   = "response.reasoning_summary_part.done"
	TypeReasoningSummaryText   = "response.reasoning_summary_text.done"
	TypeFunctionArgumentsDelta = "response.function_call_arguments.delta"
	TypeFunctionArgumentsDone  = "response.function_call_arguments.done"
	TypeError                  = "error"
)

// typeOf names an event type; it does not allocate.
func typeOf(name []byte) eventType {
	switch string(name) {
	case TypeOutputTextDelta:
		return eventOutputTextDelta
	case TypeReasoningSummaryDelta:
		return eventReasoningSummaryDelta
	case TypeReasoningTextDelta:
		return eventReasoningTextDelta
	case TypeRefusalDelta:
		return eventRefusalDelta
	case TypeCreated:
		return eventCreated
	case TypeQueued:
		return eventQueued
	case TypeInProgress:
		return eventInProgress
	case TypeCompleted:
		return eventCompleted
	case TypeFailed:
		return eventFailed
	case TypeIncomplete:
		return eventIncomplete
	case TypeOutputItemDone:
		return eventOutputItemDone
	case TypeError:
		return eventError
	}
	return eventUnknown
}

// isText reports whether events of type t carry a text delta: the agent's
// reasoning (summary or raw), its answer, or a refusal.
func (t eventType) isText() bool {
	switch t {
	case eventOutputTextDelta, eventReasoningSummaryDelta, eventReasoningTextDelta, eventRefusalDelta:
		return true
	}
	return false
}
