package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"
)

// prometheusBinary is the prometheus executable to run the dashboards'
// queries against: $PROMETHEUS_BIN, or prometheus on the PATH (Debian's
// package installs it; .ci/run does). "" when there is none.
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
	cmd  *exec.Cmd
	dir  string
	out  *os.File
}

// startPrometheus runs bin with dashboards/prometheus.yml, its target and
// interval changed to the in-process collector's, and exemplar storage on
// as docker-compose.yml has it.
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
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--enable-feature=exemplar-storage", "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &prometheus{base: "http://" + addr, cmd: cmd, dir: dir, out: logf}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Ready, and scraping: a series that appears before the first
		// scrape shows no zero to count from (in production Prometheus
		// runs long before).
		if p.scraping() {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("prometheus not scraping after 30s\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scraping reports whether the collector's target has been scraped.
func (p *prometheus) scraping() bool {
	var body struct {
		Data struct {
			ActiveTargets []struct {
				Health     string
				LastScrape time.Time `json:"lastScrape"`
			} `json:"activeTargets"`
		}
	}
	if err := p.get(context.Background(), "/api/v1/targets", &body); err != nil {
		return false
	}
	for _, tg := range body.Data.ActiveTargets {
		if tg.Health == "up" && !tg.LastScrape.IsZero() {
			return true
		}
	}
	return false
}

func (p *prometheus) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.out.Close()
	os.RemoveAll(p.dir)
}

// sample is one series of an instant query's answer.
type sample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant PromQL query.
func (p *prometheus) query(ctx context.Context, q string) ([]sample, error) {
	var body struct {
		Status    string
		Error     string
		ErrorType string
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		}
	}
	if err := p.get(ctx, "/api/v1/query?"+url.Values{"query": {q}}.Encode(), &body); err != nil {
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
