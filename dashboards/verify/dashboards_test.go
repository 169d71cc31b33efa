package verify

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

// query is one query of the dashboard: a panel target or a variable.
type query struct {
	where string // panel title / variable name, for messages
	uid   string // datasource uid
	kind  string // "prometheus" or "tempo"
	expr  string // as written
	// labelValues is a label_values(selector, label) variable query.
	labelValues bool
}

type dashboardFile struct {
	Templating struct {
		List []struct {
			Name       string
			Type       string
			Datasource *datasourceRef
			Query      json.RawMessage
		}
	}
	Panels []struct {
		Title       string
		Type        string
		Description string
		Datasource  *datasourceRef
		Targets     []struct {
			Datasource *datasourceRef
			Expr       string
			Query      string
			Exemplar   bool
		}
	}
}

type datasourceRef struct{ Type, UID string }

func readDashboard(t *testing.T) dashboardFile {
	t.Helper()
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboardFile
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	return d
}

// panelDescriptions are the panels' descriptions, by title.
func panelDescriptions(t *testing.T) map[string]string {
	t.Helper()
	d := readDashboard(t)
	out := map[string]string{}
	for _, p := range d.Panels {
		out[p.Title] = p.Description
	}
	return out
}

// dashboardQueries reads every query of the dashboard.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	d := readDashboard(t)
	var qs []query
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
		}
		qs = append(qs, query{where: "variable " + v.Name, uid: v.Datasource.UID, kind: v.Datasource.Type, expr: q.Query, labelValues: true})
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			ds := tg.Datasource
			if ds == nil {
				ds = p.Datasource
			}
			if ds == nil {
				t.Fatalf("panel %q: a target without a datasource", p.Title)
			}
			q := query{where: "panel " + p.Title, uid: ds.UID, kind: ds.Type, expr: tg.Expr}
			if ds.Type == "tempo" {
				q.expr = tg.Query
			}
			if strings.TrimSpace(q.expr) == "" {
				t.Fatalf("%s: empty query", q.where)
			}
			qs = append(qs, q)
		}
	}
	if len(qs) < 20 {
		t.Fatalf("only %d queries in the dashboard", len(qs))
	}
	return qs
}

// allSelected is every variable at All and the service brainwire, for the
// checks that only need a query to run.
var allSelected = selection{"job": {"brainwire"}, "version": {allValue}, "bucket": {allValue}, "outcome": {allValue}, "kind": {allValue}, "candidate": {allValue}, "eval_run": {allValue}}

// anchoredModifier is Prometheus 3's anchored range modifier, which the
// parser of the Prometheus module this test builds with predates: the
// name checks parse the query without it, and the real Prometheus runs it
// whole (TestTuningTruth).
var anchoredModifier = regexp.MustCompile(`\]\s+anchored\b`)

var labelValuesCall = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// promExpr is the PromQL a query runs (a label_values variable's
// selector), variables substituted, and the label a label_values names.
func promExpr(t *testing.T, q query) (expr, label string) {
	t.Helper()
	expr = interpolate(q.expr, dashboardVariables(t), allSelected, rangeBuiltins(5*time.Minute))
	if q.labelValues {
		m := labelValuesCall.FindStringSubmatch(expr)
		if m == nil {
			t.Fatalf("%s: %q is not label_values(selector, label)", q.where, q.expr)
		}
		return m[1], m[2]
	}
	if strings.Contains(expr, "$") {
		t.Fatalf("%s: unknown variable left in %q", q.where, expr)
	}
	return expr, ""
}

func TestDatasourceUIDsAreProvisioned(t *testing.T) {
	b, err := os.ReadFile(dashDir + "/grafana/provisioning/datasources/datasources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var prov struct {
		Datasources []struct {
			Name, UID, Type string
			JSONData        map[string]any `yaml:"jsonData"`
		}
	}
	if err := yaml.Unmarshal(b, &prov); err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, d := range prov.Datasources {
		types[d.UID] = d.Type
	}
	for _, q := range dashboardQueries(t) {
		if types[q.uid] == "" || types[q.uid] != q.kind {
			t.Errorf("%s: datasource %s (%s) is not provisioned (have %v)", q.where, q.uid, q.kind, types)
		}
	}
	for _, d := range prov.Datasources {
		switch d.Type {
		case "prometheus":
			dests, _ := d.JSONData["exemplarTraceIdDestinations"].([]any)
			if len(dests) == 0 {
				t.Errorf("%s: no exemplarTraceIdDestinations: exemplars would not open runs", d.Name)
			}
			for _, x := range dests {
				dest := x.(map[string]any)
				if uid, _ := dest["datasourceUid"].(string); types[uid] != "tempo" && types[uid] != "jaeger" {
					t.Errorf("exemplar destination %v: no such trace datasource", dest)
				}
				if dest["name"] != exemplarTraceLabel {
					t.Errorf("exemplar destination %v: label %v, but the collector names it %s", dest, dest["name"], exemplarTraceLabel)
				}
			}
		case "tempo":
			// A service map needs a metrics-generator, which the stack does
			// not run.
			if _, ok := d.JSONData["serviceMap"]; ok {
				t.Errorf("Tempo has a service map but the stack runs no metrics-generator")
			}
		}
	}
}

// exemplarTraceLabel is the exemplar label the collector's Prometheus
// exporter puts the trace id in.
const exemplarTraceLabel = "trace_id"

// emitted is what the collector's Prometheus exporter shows of brainwire:
// sample names and the label names each carries.
type emitted struct {
	names  map[string]bool
	labels map[string]map[string]bool // by sample name
}

// scrapeCollector reads the collector's exporter once every series the
// workload makes is there.
func scrapeCollector(t *testing.T) emitted {
	t.Helper()
	var e emitted
	deadline := time.Now().Add(20 * time.Second)
	for {
		e = emitted{names: map[string]bool{}, labels: map[string]map[string]bool{}}
		resp, err := http.Get(shared.metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		var p expfmt.TextParser
		fams, err := p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("the collector's output: %v", err)
		}
		for name, f := range fams {
			samples := []string{name}
			if f.GetType().String() == "HISTOGRAM" {
				samples = []string{name + "_bucket", name + "_sum", name + "_count"}
			}
			for _, s := range samples {
				e.names[s] = true
				if e.labels[s] == nil {
					e.labels[s] = map[string]bool{"__name__": true}
				}
				for _, m := range f.Metric {
					for _, l := range m.Label {
						e.labels[s][l.GetName()] = true
					}
				}
				if strings.HasSuffix(s, "_bucket") {
					e.labels[s]["le"] = true
				}
			}
		}
		if e.names["brainwire_upstream_errors_total"] && e.names["brainwire_follow_ups_total"] && e.names["brainwire_appinsights_items_sent_total"] &&
			e.names["brainwire_capture_confidence_bucket"] && e.names["brainwire_upstream_retries_total"] && e.names["brainwire_capture_replays_total"] {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector never showed every metric: %v", slices.Sorted(maps.Keys(e.names)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPromQLNamesWhatBrainwireEmits parses every PromQL expression of the
// dashboard and checks that each metric and label it names is in the
// collector's Prometheus output of brainwire's metrics.
func TestPromQLNamesWhatBrainwireEmits(t *testing.T) {
	e := scrapeCollector(t)
	// Labels a query may name that no sample carries: grouping results
	// of an aggregation that removed it is still an error, so none.
	for _, q := range dashboardQueries(t) {
		if q.kind != "prometheus" {
			continue
		}
		expr, label := promExpr(t, q)
		ast, err := parser.ParseExpr(anchoredModifier.ReplaceAllString(expr, "]"))
		if err != nil {
			t.Errorf("%s: %v\n%s", q.where, err, expr)
			continue
		}
		// The metrics the query reads, and every label it names.
		var metrics []string
		named := map[string]bool{}
		if label != "" {
			named[label] = true
		}
		parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
			switch n := n.(type) {
			case *parser.VectorSelector:
				ms := matching(e.names, n)
				if len(ms) == 0 {
					t.Errorf("%s: %s names no metric brainwire emits", q.where, n)
				}
				metrics = append(metrics, ms...)
				for _, m := range n.LabelMatchers {
					named[m.Name] = true
				}
			case *parser.AggregateExpr:
				for _, l := range n.Grouping {
					named[l] = true
				}
			case *parser.BinaryExpr:
				if vm := n.VectorMatching; vm != nil {
					for _, l := range append(slices.Clone(vm.MatchingLabels), vm.Include...) {
						named[l] = true
					}
				}
			}
			return nil
		})
		for l := range named {
			found := false
			for _, m := range metrics {
				if e.labels[m][l] {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: label %q is on none of %v (%s)", q.where, l, metrics, expr)
			}
		}
	}
}

// matching returns the emitted metrics a selector selects by name.
func matching(names map[string]bool, vs *parser.VectorSelector) []string {
	var out []string
	for name := range names {
		ok := true
		if vs.Name != "" && vs.Name != name {
			ok = false
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && !m.Matches(name) {
				ok = false
			}
		}
		if ok {
			out = append(out, name)
		}
	}
	return out
}
