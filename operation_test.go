package brainwire_test

import (
	"context"
	"testing"

	"github.com/brainwire/brainwire"
)

// A health check's calls are never sent again, whatever the provider names
// them: the probe reports what the service answers now.
func TestHealthProbeCallsAreNotRetried(t *testing.T) {
	ctx := brainwire.WithOperation(brainwire.WithHealthProbe(context.Background()), brainwire.Operation{Name: "get_model"})
	op, ok := brainwire.OperationFrom(ctx)
	if !ok || op.Name != brainwire.OpHealthProbe || !op.NoRetry {
		t.Fatalf("a probe's call = %+v, %v; want named %s and not retried", op, ok, brainwire.OpHealthProbe)
	}
	op, _ = brainwire.OperationFrom(brainwire.WithOperation(context.Background(), brainwire.Operation{Name: "create_response"}))
	if op.NoRetry {
		t.Fatalf("a capture's call = %+v; want it retried", op)
	}
}
