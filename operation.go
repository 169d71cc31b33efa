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
}

type operationKey struct{}

// WithOperation returns ctx carrying op, for the request made with it.
func WithOperation(ctx context.Context, op Operation) context.Context {
	return context.WithValue(ctx, operationKey{}, op)
}

// OperationFrom returns the operation a request's context carries.
func OperationFrom(ctx context.Context) (Operation, bool) {
	op, ok := ctx.Value(operationKey{}).(Operation)
	return op, ok
}
