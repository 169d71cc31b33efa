package verify

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"gopkg.in/yaml.v3"

	"github.com/brainwire/brainwire/internal/process"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// Where the stack's files are, from this directory.
const (
	root      = "../.."
	dashDir   = root + "/dashboards"
	dashboard = dashDir + "/grafana/dashboards/brainwire.json"
)

// Timing of the pipeline under test: brainwire's processes export every
// half second and Prometheus scrapes every second, so that the workload is
// counted in seconds rather than minutes. Nothing else differs from the
// compose stack.
const (
	exportInterval = 500 * time.Millisecond
	scrapeInterval = time.Second
	// lookback is Prometheus's query lookback in the test (5 minutes by
	// default): a sample older than that is not a range's start, as for a
	// person looking at the last hour of a replica that has run for a day.
	lookback = 2 * time.Second
)

// stack is brainwire's processes (a simulator, two serve replicas, two
// evaluations) exporting traces to an in-process OTLP receiver and metrics
// through the OpenTelemetry Collector's own OTLP receiver and Prometheus
// exporter, scraped by a real Prometheus, after a scripted workload whose
// every count is known (truth).
type stack struct {
	dir           string // scratch: the binary, the data, the processes' logs
	bin           string // brainwire, built from this checkout
	collectorOTLP string // the collector's OTLP/gRPC endpoint
	metricsURL    string // its Prometheus exporter's /metrics
	traces        *telemetrytest.Receiver
	// ingest is the Application Insights ingestion endpoint the serve
	// replicas send to.
	ingest *telemetrytest.Ingestion
	// prom is a running Prometheus scraping metricsURL, or nil when there
	// is no prometheus binary (the tests that need it skip, or fail in CI).
	prom *prometheus
	// truth is what the workload did, as the dashboard should count it.
	truth *truth

	stops []func()
}

var shared *stack

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	s, err := startStack()
	if err != nil {
		log.Printf("verify: starting the stack: %v", err)
		if s != nil {
			s.stop()
		}
		return 1
	}
	shared = s
	defer s.stop()
	return m.Run()
}

func (s *stack) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// tb is the testing.TB that telemetrytest wants, outside a test.
type tb struct{ testing.TB }

var mainCleanups []func()

func (tb) Helper()                   {}
func (tb) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (tb) Cleanup(f func())          { mainCleanups = append(mainCleanups, f) }

// collectorConfig reads one component's section of the compose
// collector's configuration.
func collectorConfig(key string, into any) error {
	b, err := os.ReadFile(filepath.Join(dashDir, "otel-collector.yaml"))
	if err != nil {
		return err
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return err
	}
	sub, err := confmap.NewFromStringMap(raw).Sub(key)
	if err != nil {
		return err
	}
	return sub.Unmarshal(into)
}

func startStack() (*stack, error) {
	s := &stack{}
	s.stops = append(s.stops, func() {
		for i := len(mainCleanups) - 1; i >= 0; i-- {
			mainCleanups[i]()
		}
	})
	dir, err := os.MkdirTemp("", "verify-")
	if err != nil {
		return s, err
	}
	s.dir = dir
	s.stops = append(s.stops, func() { os.RemoveAll(dir) })
	ctx := context.Background()

	// The collector's Prometheus exporter, configured as compose's is but
	// on a loopback port.
	pf := prometheusexporter.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*prometheusexporter.Config)
	if err := collectorConfig("exporters::prometheus", pcfg); err != nil {
		return s, fmt.Errorf("collector prometheus exporter config: %w", err)
	}
	promAddr, err := process.FreeAddr()
	if err != nil {
		return s, err
	}
	pcfg.Endpoint = promAddr
	exp, err := pf.CreateMetrics(ctx, exportertest.NewNopSettings(), pcfg)
	if err != nil {
		return s, fmt.Errorf("collector prometheus exporter: %w", err)
	}
	if err := exp.Start(ctx, componenttest.NewNopHost()); err != nil {
		return s, err
	}
	s.stops = append(s.stops, func() { _ = exp.Shutdown(context.Background()) })
	s.metricsURL = "http://" + promAddr + "/metrics"

	// Its OTLP receiver, gRPC only (as brainwire exports), feeding the
	// exporter.
	rf := otlpreceiver.NewFactory()
	rcfg := rf.CreateDefaultConfig().(*otlpreceiver.Config)
	if err := collectorConfig("receivers::otlp", rcfg); err != nil {
		return s, fmt.Errorf("collector otlp receiver config: %w", err)
	}
	otlpAddr, err := process.FreeAddr()
	if err != nil {
		return s, err
	}
	rcfg.GRPC.NetAddr.Endpoint = otlpAddr
	rcfg.HTTP = nil
	rcv, err := rf.CreateMetrics(ctx, receivertest.NewNopSettings(), rcfg, exp)
	if err != nil {
		return s, fmt.Errorf("collector otlp receiver: %w", err)
	}
	if err := rcv.Start(ctx, componenttest.NewNopHost()); err != nil {
		return s, err
	}
	s.stops = append(s.stops, func() { _ = rcv.Shutdown(context.Background()) })
	s.collectorOTLP = "http://" + otlpAddr
	s.traces = telemetrytest.NewReceiver(tb{})
	s.ingest = telemetrytest.NewIngestion(tb{}, telemetrytest.IngestOK)

	// Prometheus first, scraping before any series exists, as in
	// production, where it runs long before a capture.
	if bin := prometheusBinary(); bin != "" {
		if s.prom, err = startPrometheus(bin, promAddr); err != nil {
			return s, err
		}
		s.stops = append(s.stops, s.prom.stop)
	} else if os.Getenv("CI") == "true" {
		return s, fmt.Errorf("no prometheus binary: .ci/run builds Prometheus %s (PROMETHEUS_BIN)", prometheusVersion)
	}
	if s.bin, err = buildBrainwire(s.dir); err != nil {
		return s, err
	}
	w, err := runWorkload(ctx, s)
	if err != nil {
		return s, fmt.Errorf("workload: %w", err)
	}
	s.truth = w
	return s, nil
}
