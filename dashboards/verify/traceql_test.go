package verify

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// testenv holds the npm packages, Grafana's TraceQL grammar among them.
const testenv = root + "/testenv"

// runTraces returns the workload's runs' trace ids with their
// invoke_agent span ids (every one arrived before the tests began).
func runTraces(t *testing.T) map[string]string {
	t.Helper()
	runs := map[string]string{}
	for _, r := range shared.truth.runs {
		runs[r.traceID] = r.spanID
	}
	return runs
}

// parsedTraceQL is what Grafana's TraceQL grammar makes of a query.
type parsedTraceQL struct {
	Errors     []string `json:"errors"`
	Attributes []string `json:"attributes"` // as written: span.x, resource.x, .x
	Intrinsics []string `json:"intrinsics"`
}

// parseTraceQL parses queries with @grafana/lezer-traceql (the grammar
// Grafana's Tempo query editor uses), through Node.js.
func parseTraceQL(t *testing.T, queries []string) []parsedTraceQL {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is required: the TraceQL grammar is an npm package")
	}
	if _, err := os.Stat(testenv + "/node_modules/@grafana/lezer-traceql"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("@grafana/lezer-traceql is not installed: npm ci --prefix testenv")
		}
		t.Skip("@grafana/lezer-traceql is not installed (npm ci --prefix testenv)")
	}
	in, _ := json.Marshal(queries)
	cmd := exec.Command(node, testenv+"/traceql.cjs")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("traceql.cjs: %v\n%s", err, stderr.String())
	}
	var res []parsedTraceQL
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(queries) {
		t.Fatalf("traceql.cjs output %s: %v", out, err)
	}
	return res
}

// TestTraceQLNamesWhatBrainwireSets parses every TraceQL query of the
// dashboard with Grafana's grammar and checks that every attribute it
// names is one brainwire sets on its spans (or resource).
func TestTraceQLNamesWhatBrainwireSets(t *testing.T) {
	runTraces(t)
	spanAttrs, resourceAttrs := map[string]bool{}, map[string]bool{}
	for _, s := range shared.traces.Spans() {
		for _, kv := range s.Attributes {
			spanAttrs[kv.Key] = true
		}
		for _, kv := range s.Resource.Values {
			resourceAttrs[kv.Key] = true
		}
	}
	var queries, where []string
	for _, q := range dashboardQueries(t) {
		if q.kind == "tempo" {
			queries = append(queries, interpolate(q.expr, dashboardVariables(t), allSelected, rangeBuiltins(5*time.Minute)))
			where = append(where, q.where)
		}
	}
	if len(queries) < 3 {
		t.Fatalf("%d TraceQL queries", len(queries))
	}
	// The grammar must be able to fail: a query with a syntax error and
	// one naming what brainwire does not set.
	bad := parseTraceQL(t, []string{`{ span.brainwire.capture.outcome = }`})
	if len(bad[0].Errors) == 0 {
		t.Fatal("the grammar accepts a broken query")
	}
	for i, p := range parseTraceQL(t, queries) {
		if len(p.Errors) > 0 {
			t.Errorf("%s: %v\n%s", where[i], p.Errors, queries[i])
		}
		if len(p.Attributes) == 0 {
			t.Errorf("%s: names no attribute: %s", where[i], queries[i])
		}
		for _, a := range p.Attributes {
			scope, name, _ := strings.Cut(a, ".")
			ok := false
			switch scope {
			case "span":
				ok = spanAttrs[name]
			case "resource":
				ok = resourceAttrs[name]
			case "":
				ok = spanAttrs[name] || resourceAttrs[name]
			}
			if !ok {
				t.Errorf("%s: %s is not an attribute brainwire sets", where[i], a)
			}
		}
		for _, in := range p.Intrinsics {
			if in != "name" && in != "status" && in != "duration" && in != "kind" {
				t.Errorf("%s: intrinsic %s", where[i], in)
			}
		}
	}
}
