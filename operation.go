package brainwire

import "context"

// Operation names one call a provider makes to its upstream service. The
// provider knows what each call is and says so on the request's context;
// what sits below it (client spans, recordings) reads it there instead of
// working it out from URLs.
type Operation struct {
	// Name is the operation, in the provider's vocabulary
	// ("process_thread_run", "submit_tool_outputs", ...).
	Name string
	// ThreadID and RunID are the upstream conversation and run the call
	// is about, when it is about one.
	ThreadID string
	RunID    string
	// Service names the service called when it is not the agent's
	// (transcription's "azure.ai.openai"); telemetry names it as the
	// call's provider.
	Service string

	// NoRetry keeps the call from being sent again when the service
	// refuses it for a moment: a health probe reports what it sees.
	NoRetry bool
	// Took, when set, asks the service whether a create it may have done
	// (the request went out and its answer was lost, or a gateway
	// answered 500, 502 or 504) was done after all, so that it is looked
	// up rather than repeated. The call sending again asks it with its own
	// context; an error means the service could not tell. A Took that can
	// undo what was done (a new thread, with its run cancelled) does so
	// and answers false: the call is then sent again.
	Took func(ctx context.Context) (bool, error)
	// Key, when set, is the Idempotency-Key every attempt of a POST goes
	// with: a provider that tags what it creates with it (metadata) can
	// look the tag up in Took. Empty: the retry layer makes one.
	Key string
}

type operationKey struct{}

// OpHealthProbe names every call a health check makes to the agent
// service, whatever the call (a deployment, a model, an agent, the list of
// apps). A probe asks once: its answer is whether the service answers
// now, so what sits below must not retry it.
const OpHealthProbe = "health_probe"

// WithHealthProbe returns ctx marking the calls made with it as a health
// check's: each is named OpHealthProbe, whatever the provider names it.
func WithHealthProbe(ctx context.Context) context.Context {
	return context.WithValue(ctx, operationKey{}, Operation{Name: OpHealthProbe, NoRetry: true})
}

// WithOperation returns ctx carrying op, for the request made with it. On
// a health check's context (WithHealthProbe) the call stays named
// OpHealthProbe and is not sent again.
func WithOperation(ctx context.Context, op Operation) context.Context {
	if cur, ok := OperationFrom(ctx); ok && cur.Name == OpHealthProbe {
		op.Name, op.NoRetry = OpHealthProbe, true
	}
	return context.WithValue(ctx, operationKey{}, op)
}

// OperationFrom returns the operation a request's context carries.
func OperationFrom(ctx context.Context) (Operation, bool) {
	op, ok := ctx.Value(operationKey{}).(Operation)
	return op, ok
}
