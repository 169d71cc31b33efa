package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// consoleMetricExporter writes each collection as one JSON line, for
// local debugging (the stdoutmetric module is not a dependency).
type consoleMetricExporter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newConsoleMetricExporter(w io.Writer) *consoleMetricExporter {
	return &consoleMetricExporter{enc: json.NewEncoder(w)}
}

func (e *consoleMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *consoleMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *consoleMetricExporter) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.enc.Encode(rm); err != nil {
		return fmt.Errorf("console metrics: %w", err)
	}
	return nil
}

func (e *consoleMetricExporter) ForceFlush(context.Context) error { return nil }
func (e *consoleMetricExporter) Shutdown(context.Context) error   { return nil }
