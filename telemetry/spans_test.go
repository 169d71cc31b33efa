package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// TestLostSpansAreCounted: spans that end while the queue is full, or
// that the collector never takes, are counted and logged, and with those
// exported they add up to the spans ended.
func TestLostSpansAreCounted(t *testing.T) {
	const ended = 40
	for _, tc := range []struct {
		name      string
		collector func(t *testing.T) (endpoint string, release func())
		reason    string
	}{
		{"collector behind", func(t *testing.T) (string, func()) {
			r := telemetrytest.NewReceiver(t)
			r.Hold()
			return r.Endpoint(), r.Release
		}, dropQueueFull},
		{"collector gone", func(t *testing.T) (string, func()) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			return "http://" + l.Addr().String(), func() {}
		}, dropExportFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint, release := tc.collector(t)
			var logs bytes.Buffer
			tuning := spanTuning{queue: 4, batch: 2, batchTimeout: time.Millisecond, exportTimeout: 300 * time.Millisecond}
			tp, pipes, err := newTracerProvider(context.Background(), Settings{Traces: &Exporters{OTLP: endpoint}},
				resource.Empty(), io.Discard, tuning, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			for range ended {
				_, span := tp.Tracer("test").Start(context.Background(), "span")
				span.End()
			}
			release()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tp.Shutdown(ctx); err != nil && tc.reason == dropQueueFull {
				t.Fatal(err)
			}
			p := pipes[0]
			lost := map[string]int64{dropQueueFull: p.queueFull.Load(), dropExportFailed: p.failed.Load(), dropShutdown: p.left.Load()}
			if got := p.exported.Load() + p.lost(); got != ended {
				t.Errorf("exported %d + lost %v = %d, want the %d ended", p.exported.Load(), lost, got, ended)
			}
			if lost[tc.reason] == 0 {
				t.Errorf("lost %v, want some %s", lost, tc.reason)
			}
			if !strings.Contains(logs.String(), "spans dropped") || !strings.Contains(logs.String(), "spans_dropped_total="+strconv.FormatInt(p.lost(), 10)) {
				t.Errorf("log %q does not tell the %d lost", logs.String(), p.lost())
			}
		})
	}
}
