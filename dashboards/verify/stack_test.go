package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"gopkg.in/yaml.v3"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/app"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/telemetry/appinsights"
	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// Where the stack's files are, from this directory.
const (
	root      = "../.."
	dashDir   = root + "/dashboards"
	dashboard = dashDir + "/grafana/dashboards/brainwire.json"
)

// Timing of the in-process pipeline: exports and scrapes come often, and a
// new counter series reads 0 for several scrapes before its count.
const (
	exportInterval = 300 * time.Millisecond
	scrapeInterval = time.Second
	zeroHold       = 4 * time.Second
)

const apiKey = "verify-key-0123456789abcdef"

// stack is brainwire with telemetry going through the collector's
// components, after a known set of captures and corrections.
type stack struct {
	collectorOTLP string // the collector's OTLP/gRPC endpoint
	metricsURL    string // its Prometheus exporter's /metrics
	traces        *telemetrytest.Receiver
	agent         brainwire.AgentInfo
	evalAgent     brainwire.AgentInfo // the eval capture's instructions
	// want are the true counts of the workload.
	want workload
	// prom is a running Prometheus scraping metricsURL, or nil.
	prom *prometheus

	stops []func()
}

// workload is what the stack did, as the dashboards should count it.
type workload struct {
	outcomes    map[brainwire.Outcome]int // text and follow-up captures
	corrections map[[3]string]int         // agent outcome, agent bucket, person's bucket
	followUps   map[string]int            // round + outcome
	upstream    map[string]int            // source + error type
	filed       int                       // captures the agent's version filed (classified, low confidence, misunderstood)
	incorrect   int                       // recategorized to another bucket
	runs        map[string]bool           // capture run ids
}

var shared *stack

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	s, err := startStack()
	if err != nil {
		log.Printf("verify: starting the stack: %v", err)
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

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

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

func startStack() (_ *stack, err error) {
	s := &stack{}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	s.stops = append(s.stops, func() {
		for i := len(mainCleanups) - 1; i >= 0; i-- {
			mainCleanups[i]()
		}
	})
	ctx := context.Background()

	// The collector's Prometheus exporter, configured as compose's is but
	// on a loopback port.
	pf := prometheusexporter.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*prometheusexporter.Config)
	if err := collectorConfig("exporters::prometheus", pcfg); err != nil {
		return nil, fmt.Errorf("collector prometheus exporter config: %w", err)
	}
	promAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	pcfg.Endpoint = promAddr
	exp, err := pf.CreateMetrics(ctx, exportertest.NewNopSettings(), pcfg)
	if err != nil {
		return nil, fmt.Errorf("collector prometheus exporter: %w", err)
	}
	if err := exp.Start(ctx, componenttest.NewNopHost()); err != nil {
		return nil, err
	}
	s.stops = append(s.stops, func() { _ = exp.Shutdown(context.Background()) })
	s.metricsURL = "http://" + promAddr + "/metrics"

	// Its OTLP receiver, gRPC only, feeding the exporter.
	rf := otlpreceiver.NewFactory()
	rcfg := rf.CreateDefaultConfig().(*otlpreceiver.Config)
	otlpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	rcfg.GRPC.NetAddr.Endpoint = otlpAddr
	rcfg.HTTP = nil
	rcv, err := rf.CreateMetrics(ctx, receivertest.NewNopSettings(), rcfg, exp)
	if err != nil {
		return nil, fmt.Errorf("collector otlp receiver: %w", err)
	}
	if err := rcv.Start(ctx, componenttest.NewNopHost()); err != nil {
		return nil, err
	}
	s.stops = append(s.stops, func() { _ = rcv.Shutdown(context.Background()) })
	s.collectorOTLP = "http://" + otlpAddr
	s.traces = telemetrytest.NewReceiver(tb{})

	// Prometheus first, so that it scrapes the zeros every new series
	// starts with.
	if bin := prometheusBinary(); bin != "" {
		if s.prom, err = startPrometheus(bin, promAddr); err != nil {
			return nil, err
		}
		s.stops = append(s.stops, s.prom.stop)
	}
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// run starts brainwire against the simulator with telemetry to the
// collector, and makes the workload's captures and corrections.
func (s *stack) run(ctx context.Context) error {
	os.Setenv("OTEL_METRIC_EXPORT_INTERVAL", fmt.Sprint(exportInterval.Milliseconds()))
	ingest := telemetrytest.NewIngestion(tb{}, telemetrytest.IngestOK)
	ai, err := appinsights.ParseConnectionString(ingest.ConnectionString())
	if err != nil {
		return err
	}
	tel, err := telemetry.Start(ctx, telemetry.Settings{
		ServiceName:       "brainwire",
		Traces:            &telemetry.Exporters{OTLP: s.traces.Endpoint()},
		Metrics:           &telemetry.Exporters{OTLP: s.collectorOTLP},
		AppInsights:       &ai,
		CaptureContent:    true,
		MaxReasoningBytes: telemetry.DefaultMaxReasoningBytes,
		ZeroHold:          zeroHold,
	}, telemetry.Options{Agent: telemetry.Agent{Name: "Classifier", ID: simulator.DefaultAgentID, Provider: foundry.ProviderName}})
	if err != nil {
		return err
	}
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	dir, err := os.MkdirTemp("", "verify-")
	if err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "brainwire.db"))
	if err != nil {
		return err
	}
	srv, err := app.New(app.Config{
		Keys: server.Keys{apiKey: "verify"},
		Agent: app.Foundry(sim.URL+simulator.ProjectPath, simulator.DefaultAgentID, "", func(next http.RoundTripper) http.RoundTripper {
			return foundry.NewStaticTokenTransport("simulator", next)
		}),
		Store:     st,
		Telemetry: tel,
		AgentName: "Classifier",
		KeepAlive: -1,
	})
	if err != nil {
		return err
	}
	hs := httptest.NewServer(srv.Handler())
	s.stops = append(s.stops, func() {
		hs.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
		st.Close()
		sim.Close()
		os.RemoveAll(dir)
	})
	if s.agent, err = srv.RefreshAgent(ctx); err != nil {
		return err
	}
	if err := s.workload(hs.URL); err != nil {
		return err
	}
	// And one capture as `brainwire eval` makes them: other instructions,
	// marked with the evaluation's id.
	evalSrv, err := app.New(app.Config{
		Keys: server.Keys{apiKey: "verify"},
		Agent: app.Foundry(sim.URL+simulator.ProjectPath, simulator.DefaultAgentID, "", func(next http.RoundTripper) http.RoundTripper {
			return foundry.NewStaticTokenTransport("simulator", next)
		}),
		Store: st, Telemetry: tel, AgentName: "Classifier", KeepAlive: -1,
		Instructions: "Admin cues: gym", EvalRunID: "eval-verify",
	})
	if err != nil {
		return err
	}
	es := httptest.NewServer(evalSrv.Handler())
	defer es.Close()
	if s.evalAgent, err = evalSrv.RefreshAgent(ctx); err != nil {
		return err
	}
	ev, err := post(es.URL, "/api/capture", map[string]any{"text": "Go to the gym after work"})
	if err != nil {
		return err
	}
	if ev.outcome != "CLASSIFIED" {
		return fmt.Errorf("eval capture: %s", ev.outcome)
	}
	s.want.outcomes[brainwire.OutcomeClassified]++
	s.want.runs[ev.runID] = true
	return nil
}

// workload makes captures of every outcome, a tool error, an upstream
// failure, two recategorizations and a follow-up, and records what they
// should count as.
func (s *stack) workload(base string) error {
	w := workload{outcomes: map[brainwire.Outcome]int{}, corrections: map[[3]string]int{}, followUps: map[string]int{},
		upstream: map[string]int{}, runs: map[string]bool{}}
	type capture struct {
		text    string
		outcome brainwire.Outcome
		bucket  string
	}
	items := map[string]string{}
	for _, c := range []capture{
		{"Call mom about her birthday on Sunday", brainwire.OutcomeClassified, "People"},
		{"Finish the quarterly report draft by Thursday", brainwire.OutcomeClassified, "Projects"},
		{"Pay the electricity bill", brainwire.OutcomeClassified, "Admin"},
		{"#invalid-bucket Renew my passport before June", brainwire.OutcomeClassified, "Admin"},
		{"Meet Jonas to review the project roadmap", brainwire.OutcomeLowConfidence, "Projects"},
		{"asdf qwerty zxcv", brainwire.OutcomeMisunderstood, "Ideas"},
		{"#fail Lunch with Sarah", brainwire.OutcomeError, ""},
	} {
		ev, err := post(base, "/api/capture", map[string]any{"text": c.text})
		if err != nil {
			return err
		}
		if got := brainwire.Outcome(strings.ToLower(ev.outcome)); got != c.outcome && !(c.outcome == brainwire.OutcomeLowConfidence && ev.outcome == "LOW_CONFIDENCE") {
			return fmt.Errorf("%q: outcome %s, want %s", c.text, ev.outcome, c.outcome)
		}
		w.outcomes[c.outcome]++
		w.runs[ev.runID] = true
		if c.outcome.Filed() {
			w.filed++
		}
		items[c.text] = ev.itemID
	}
	w.upstream["run server_error"] = 1
	// The person moves a classified capture, and confirms a low-confidence one.
	if err := patch(base, items["Call mom about her birthday on Sunday"], "Ideas"); err != nil {
		return err
	}
	w.corrections[[3]string{"classified", "People", "Ideas"}]++
	w.incorrect++
	if err := patch(base, items["Meet Jonas to review the project roadmap"], "Projects"); err != nil {
		return err
	}
	w.corrections[[3]string{"low_confidence", "Projects", "Projects"}]++
	// And answers the misunderstood capture's question.
	ev, err := post(base, "/api/capture/follow-up", map[string]any{"inbox_item_id": items["asdf qwerty zxcv"],
		"follow_up_text": "I meant: call my friend Sam about his birthday", "follow_up_round": 1})
	if err != nil {
		return err
	}
	if ev.outcome != "CLASSIFIED" {
		return fmt.Errorf("follow-up: %s", ev.outcome)
	}
	w.outcomes[brainwire.OutcomeClassified]++
	w.filed++
	w.runs[ev.runID] = true
	w.followUps["1 classified"]++
	s.want = w
	return nil
}

type phoneEvents struct {
	outcome, itemID, runID string
}

// post sends a capture and reads its stream to the end.
func post(base, path string, body map[string]any) (phoneEvents, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return phoneEvents{}, err
	}
	defer resp.Body.Close()
	var ev phoneEvents
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type  string
			RunID string `json:"runId"`
			Value struct {
				InboxItemID string `json:"inboxItemId"`
			}
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return ev, err
		}
		switch e.Type {
		case "CLASSIFIED", "LOW_CONFIDENCE", "MISUNDERSTOOD", "UNRESOLVED", "ERROR":
			ev.outcome, ev.itemID = e.Type, e.Value.InboxItemID
		case "COMPLETE":
			ev.runID = e.RunID
		}
	}
	return ev, sc.Err()
}

func patch(base, id, bucket string) error {
	req, _ := http.NewRequest(http.MethodPatch, base+"/api/inbox/"+id+"/recategorize", strings.NewReader(`{"bucket":"`+bucket+`"}`))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("recategorize %s: %s %s", id, resp.Status, b)
	}
	return nil
}
