package responses

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
