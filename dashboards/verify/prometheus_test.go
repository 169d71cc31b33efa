package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/brainwire/brainwire/internal/process"
)

// prometheusVersion is the Prometheus the dashboard is written for and
// docker-compose.yml runs: its created-timestamp-zero-ingestion stores a
// zero where each series starts, and its anchored range selectors count
// without extrapolating. .ci/run builds it from the Go module proxy
// (github.com/prometheus/prometheus v0.316.0 is Prometheus 3.16.0).
const (
	prometheusVersion = "3.16.0"
	prometheusModule  = "v0.316.0"
)

// prometheusBinary is the prometheus executable to run the dashboards'
// queries against: $PROMETHEUS_BIN, or prometheus on the PATH. "" when
// there is none.
func prometheusBinary() string {
	if p := os.Getenv("PROMETHEUS_BIN"); p != "" {
		return p
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		return ""
	}
	return p
}

// prometheus is a Prometheus server scraping the collector's exporter.
type prometheus struct {
	base string
	p    *process.Proc
	dir  string
}

// startPrometheus runs bin with dashboards/prometheus.yml, its target and
// interval changed to the in-process collector's, and the feature flags
// docker-compose.yml gives it.
func startPrometheus(bin, target string) (*prometheus, error) {
	dir, err := os.MkdirTemp("", "verify-prometheus-")
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dashDir, "prometheus.yml"))
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("prometheus.yml: %w", err)
	}
	cfg["global"].(map[string]any)["scrape_interval"] = scrapeInterval.String()
	jobs := cfg["scrape_configs"].([]any)
	if len(jobs) != 1 {
		return nil, fmt.Errorf("prometheus.yml: %d scrape configs, want the collector's", len(jobs))
	}
	jobs[0].(map[string]any)["static_configs"] = []any{map[string]any{"targets": []any{target}}}
	out, _ := yaml.Marshal(cfg)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, out, 0o644); err != nil {
		return nil, err
	}
	addr, err := process.FreeAddr()
	if err != nil {
		return nil, err
	}
	if err := checkPrometheusVersion(bin); err != nil {
		return nil, err
	}
	flags, err := composePrometheusFlags()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--config.file=" + cfgPath, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr, "--log.level=warn", "--query.lookback-delta=" + lookback.String()}, flags...)
	cmd := exec.Command(bin, args...)
	dieWithTest(cmd)
	proc, err := process.Start("prometheus", cmd, filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	p := &prometheus{base: "http://" + addr, p: proc, dir: dir}
	// Ready, and scraping: a series that appears before the first scrape
	// shows no zero to count from (in production Prometheus runs long
	// before).
	err = proc.WaitReady(context.Background(), 30*time.Second, func(context.Context) error {
		if !p.scraping() {
			return errors.New("not scraping")
		}
		return nil
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// checkPrometheusVersion refuses a Prometheus older than the dashboard
// needs, whose answers would be wrong rather than failing: a release
// binary says its version, one built with go install its module's.
func checkPrometheusVersion(bin string) error {
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %v\n%s", bin, err, out)
	}
	if strings.Contains(string(out), "version "+prometheusVersion+" ") {
		return nil
	}
	mod, _ := exec.Command("go", "version", "-m", bin).Output()
	if strings.Contains(string(mod), "\tgithub.com/prometheus/prometheus\t"+prometheusModule+"\t") {
		return nil
	}
	return fmt.Errorf("%s is not Prometheus %s (module %s):\n%s%s", bin, prometheusVersion, prometheusModule, out, mod)
}

// composePrometheusFlags are the --enable-feature flags docker-compose.yml
// runs Prometheus with.
func composePrometheusFlags() ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		return nil, err
	}
	var c struct {
		Services map[string]struct {
			Command []string
		}
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("docker-compose.yml: %w", err)
	}
	var flags []string
	for _, a := range c.Services["prometheus"].Command {
		if strings.HasPrefix(a, "--enable-feature=") {
			flags = append(flags, a)
		}
	}
	if len(flags) == 0 {
		return nil, fmt.Errorf("docker-compose.yml runs prometheus with no --enable-feature")
	}
	return flags, nil
}

// lastScrape is when the collector's target was last scraped.
func (p *prometheus) lastScrape() time.Time {
	var body struct {
		Data struct {
			ActiveTargets []struct {
				Health     string
				LastScrape time.Time `json:"lastScrape"`
			} `json:"activeTargets"`
		}
	}
	if err := p.get(context.Background(), "/api/v1/targets", &body); err != nil {
		return time.Time{}
	}
	for _, tg := range body.Data.ActiveTargets {
		if tg.Health == "up" {
			return tg.LastScrape
		}
	}
	return time.Time{}
}

// waitScrapeAfter waits for a scrape of the collector that began after t.
func (p *prometheus) waitScrapeAfter(t time.Time, within time.Duration) error {
	deadline := time.Now().Add(within)
	for !p.lastScrape().After(t) {
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus has not scraped the collector since %s", t.Format(time.StampMilli))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// scraping reports whether the collector's target has been scraped.
func (p *prometheus) scraping() bool { return !p.lastScrape().IsZero() }

func (p *prometheus) stop() {
	p.p.Kill()
	os.RemoveAll(p.dir)
}

// sample is one series of an instant query's answer.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant PromQL query now.
func (p *prometheus) query(ctx context.Context, q string) ([]sample, error) {
	return p.queryAt(ctx, q, time.Time{})
}

// queryAt runs an instant PromQL query at t (now when zero), as Grafana
// runs a table's or a stat's.
func (p *prometheus) queryAt(ctx context.Context, q string, t time.Time) ([]sample, error) {
	var body struct {
		Status    string
		Error     string
		ErrorType string
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		}
	}
	v := url.Values{"query": {q}}
	if !t.IsZero() {
		v.Set("time", strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64))
	}
	if err := p.get(ctx, "/api/v1/query?"+v.Encode(), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s: %s", body.ErrorType, body.Error)
	}
	var out []sample
	switch body.Data.ResultType {
	case "vector":
		var rs []struct {
			Metric map[string]string
			Value  [2]any
		}
		if err := json.Unmarshal(body.Data.Result, &rs); err != nil {
			return nil, err
		}
		for _, r := range rs {
			var v float64
			fmt.Sscan(fmt.Sprint(r.Value[1]), &v)
			out = append(out, sample{Metric: r.Metric, Value: v})
		}
	case "scalar":
		var r [2]any
		if err := json.Unmarshal(body.Data.Result, &r); err != nil {
			return nil, err
		}
		var v float64
		fmt.Sscan(fmt.Sprint(r[1]), &v)
		out = append(out, sample{Value: v})
	default:
		return nil, fmt.Errorf("result type %s", body.Data.ResultType)
	}
	return out, nil
}

// exemplars returns the exemplars' labels of the series q selects over
// the last window.
func (p *prometheus) exemplars(ctx context.Context, q string, window time.Duration) ([]map[string]string, error) {
	now := time.Now()
	var body struct {
		Status string
		Error  string
		Data   []struct {
			SeriesLabels map[string]string `json:"seriesLabels"`
			Exemplars    []struct {
				Labels map[string]string
				Value  string
			}
		}
	}
	v := url.Values{"query": {q}, "start": {fmt.Sprint(now.Add(-window).Unix())}, "end": {fmt.Sprint(now.Unix() + 1)}}
	if err := p.get(ctx, "/api/v1/query_exemplars?"+v.Encode(), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("exemplars: %s", body.Error)
	}
	var out []map[string]string
	for _, s := range body.Data {
		for _, e := range s.Exemplars {
			e.Labels["__series_le"] = s.SeriesLabels["le"]
			out = append(out, e.Labels)
		}
	}
	return out, nil
}

func (p *prometheus) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: %s: %w", path, b, err)
	}
	return nil
}
