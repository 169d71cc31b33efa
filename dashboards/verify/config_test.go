package verify

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"gopkg.in/yaml.v3"
)

// TestComposeLoads loads docker-compose.yml with the compose-spec loader
// (what docker compose runs) and checks what the dashboards rely on: the
// files it mounts exist, Prometheus stores exemplars, and Grafana gets the
// provisioning and the dashboard.
func TestComposeLoads(t *testing.T) {
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.LoadWithContext(t.Context(), types.ConfigDetails{
		WorkingDir:  abs,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(abs, "docker-compose.yml")}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) {
		o.SetProjectName("brainwire", true)
		o.Profiles = []string{"brainwire"} // the server's service too
	})
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	// brainwire itself runs from the Dockerfile beside the stack it reports to.
	want := []string{"brainwire", "grafana", "jaeger", "otel-collector", "prometheus", "tempo"}
	if got := p.ServiceNames(); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("services %v, want %v", got, want)
	}
	if b := p.Services["brainwire"].Build; b == nil {
		t.Error("brainwire service has no build")
	} else if _, err := os.Stat(filepath.Join(b.Context, "Dockerfile")); err != nil {
		t.Errorf("brainwire builds from %s: %v", b.Context, err)
	}
	for name, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s mounts %s, which does not exist", name, v.Source)
			}
		}
	}
	if cmd := strings.Join(p.Services["prometheus"].Command, " "); !strings.Contains(cmd, "--enable-feature=exemplar-storage") {
		t.Errorf("prometheus command %q: exemplar storage is off", cmd)
	}
	mounts := map[string]string{}
	for _, v := range p.Services["grafana"].Volumes {
		mounts[v.Target] = v.Source
	}
	if !strings.HasSuffix(mounts["/etc/grafana/provisioning"], "dashboards/grafana/provisioning") ||
		!strings.HasSuffix(mounts["/var/lib/grafana/dashboards"], "dashboards/grafana/dashboards") {
		t.Errorf("grafana mounts %v", mounts)
	}
	// The dashboard provider reads where the dashboards are mounted.
	b, err := os.ReadFile(dashDir + "/grafana/provisioning/dashboards/dashboards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "path: /var/lib/grafana/dashboards") {
		t.Errorf("dashboard provider does not read /var/lib/grafana/dashboards:\n%s", b)
	}
}

// TestCollectorConfigDecodes decodes the compose collector's configuration
// into its components' own configuration types and checks the pipelines
// use only components it defines, with OpenMetrics (exemplars) on.
func TestCollectorConfigDecodes(t *testing.T) {
	pcfg := prometheusexporter.NewFactory().CreateDefaultConfig().(*prometheusexporter.Config)
	if err := collectorConfig("exporters::prometheus", pcfg); err != nil {
		t.Fatal(err)
	}
	if err := pcfg.Validate(); err != nil {
		t.Errorf("prometheus exporter: %v", err)
	}
	if !pcfg.EnableOpenMetrics {
		t.Error("enable_open_metrics is off: Prometheus gets no exemplars")
	}
	rcfg := otlpreceiver.NewFactory().CreateDefaultConfig().(*otlpreceiver.Config)
	if err := collectorConfig("receivers::otlp", rcfg); err != nil {
		t.Fatal(err)
	}
	if err := rcfg.Validate(); err != nil {
		t.Errorf("otlp receiver: %v", err)
	}
	if rcfg.GRPC == nil || rcfg.GRPC.MaxRecvMsgSizeMiB < 32 {
		t.Errorf("otlp receiver: gRPC messages limited to %v MiB; a long run's span needs 32", rcfg.GRPC)
	}

	b, err := os.ReadFile(filepath.Join(dashDir, "otel-collector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Receivers, Processors, Exporters map[string]any
		Service                          struct {
			Pipelines map[string]struct{ Receivers, Processors, Exporters []string }
		}
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for name, p := range c.Service.Pipelines {
		for kind, list := range map[string][]string{"receiver": p.Receivers, "processor": p.Processors, "exporter": p.Exporters} {
			defined := map[string]map[string]any{"receiver": c.Receivers, "processor": c.Processors, "exporter": c.Exporters}[kind]
			for _, id := range list {
				if _, ok := defined[id]; !ok {
					t.Errorf("pipeline %s uses %s %s, which is not defined", name, kind, id)
				}
			}
		}
	}
	if m := c.Service.Pipelines["metrics"]; !slices.Contains(m.Exporters, "prometheus") {
		t.Errorf("metrics pipeline exports to %v, want prometheus", m.Exporters)
	}
}
