package verify

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// allValue is what Grafana sends for a variable's All when the variable
// sets allValue (every variable of the dashboard does).
const allValue = "$__all"

// variable is a dashboard variable as Grafana holds it.
type variable struct {
	Name       string
	Type       string
	Multi      bool
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
	Query      json.RawMessage
	Datasource *datasourceRef
	Options    []struct{ Value string }
}

// selection is one state of the variables: the values selected of each
// (allValue alone for All).
type selection map[string][]string

// has reports whether value v is selected for variable name.
func (sel selection) has(name, v string) bool {
	vs := sel[name]
	return len(vs) == 0 || slices.Contains(vs, allValue) || slices.Contains(vs, v)
}

// ran reports whether the selection keeps what a run of version on job did.
func (sel selection) ran(job, version string) bool {
	return sel.has("job", job) && sel.has("version", version)
}

// hasBucket is has for the bucket variable, where a capture filed in no
// bucket (an error, an unresolved run) has no bucket label or an empty
// attribute: only All (.*) matches it.
func (sel selection) hasBucket(b string) bool {
	vs := sel["bucket"]
	if len(vs) == 0 || slices.Contains(vs, allValue) {
		return true
	}
	return b != "" && slices.Contains(vs, b)
}

func (sel selection) String() string {
	var parts []string
	for _, n := range []string{"job", "version", "bucket", "outcome", "kind"} {
		if vs, ok := sel[n]; ok {
			v := strings.Join(vs, "+")
			if v == allValue {
				v = "All"
			}
			parts = append(parts, n+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

func dashboardVariables(t *testing.T) map[string]variable {
	t.Helper()
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Templating struct{ List []variable } }
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]variable{}
	for _, v := range d.Templating.List {
		out[v.Name] = v
	}
	return out
}

// Grafana's escapes, as its Prometheus data source and its regex format
// apply them (public/app/plugins/datasource/prometheus: prometheusRegularEscape,
// prometheusSpecialRegexEscape; the regex formatter: escape with one
// backslash).
var (
	promSpecial  = regexp.MustCompile(`[$^*{}\[\]'+?.()|]`)
	regexSpecial = regexp.MustCompile(`[\\^$*+?.()|{}\[\]/]`)
)

func promRegularEscape(v string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\\'`).Replace(v)
}

func promSpecialRegexEscape(v string) string {
	v = strings.ReplaceAll(v, `\`, `\\\\`)
	return promSpecial.ReplaceAllString(v, `\\$0`)
}

// interpolate substitutes the variables of a query as Grafana does before
// sending it: $name (the Prometheus data source's own formatting) and
// ${name:regex} (the regex format, which the Tempo queries use), a custom
// All value unformatted, and the built-ins given.
func interpolate(q string, vars map[string]variable, sel selection, builtins map[string]string) string {
	format := func(name, how string) string {
		v, ok := vars[name]
		vals := sel[name]
		if !ok || len(vals) == 0 {
			return "$" + name // left for the caller to notice
		}
		if slices.Contains(vals, allValue) && v.AllValue != "" {
			return v.AllValue
		}
		var esc func(string) string
		switch {
		case how == "regex":
			esc = func(s string) string { return regexSpecial.ReplaceAllString(s, `\$0`) }
		case !v.Multi && !v.IncludeAll:
			return promRegularEscape(vals[0])
		default:
			esc = promSpecialRegexEscape
		}
		out := make([]string, len(vals))
		for i, s := range vals {
			out[i] = esc(s)
		}
		if len(out) == 1 {
			return out[0]
		}
		return "(" + strings.Join(out, "|") + ")"
	}
	for k, v := range builtins {
		q = strings.ReplaceAll(q, k, v)
	}
	q = regexp.MustCompile(`\$\{(\w+):(\w+)\}`).ReplaceAllStringFunc(q, func(m string) string {
		p := regexp.MustCompile(`\$\{(\w+):(\w+)\}`).FindStringSubmatch(m)
		return format(p[1], p[2])
	})
	return regexp.MustCompile(`\$(\w+)`).ReplaceAllStringFunc(q, func(m string) string {
		return format(m[1:], "")
	})
}

// rangeBuiltins are Grafana's $__range for a dashboard time range of d
// (whole seconds), and $__rate_interval set to the same window: a person
// who zooms out until one interval spans the whole range reads each rate
// panel's last point as the range's total per second.
func rangeBuiltins(d time.Duration) map[string]string {
	s := fmt.Sprintf("%ds", int64(math.Ceil(d.Seconds())))
	return map[string]string{"$__rate_interval": s, "$__range": s, "$__interval": "15s"}
}

// usedVariables lists the dashboard variables q names.
func usedVariables(q string, vars map[string]variable) []string {
	var out []string
	for name := range vars {
		if strings.Contains(q, "$"+name) || strings.Contains(q, "${"+name+":") || strings.Contains(q, "${"+name+"}") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// selections enumerates states of the used variables: for job every
// service and All, for every other All, each value alone, and two values at once;
// the variables q does not use stay at All.
func selections(used []string, options map[string][]string) []selection {
	out := []selection{{}}
	for _, name := range used {
		opts := options[name]
		var choices [][]string
		if name == "job" {
			for _, o := range opts {
				choices = append(choices, []string{o})
			}
		} else {
			choices = append(choices, []string{allValue})
			for _, o := range opts {
				choices = append(choices, []string{o})
			}
			if len(opts) >= 2 {
				choices = append(choices, []string{opts[0], opts[len(opts)-1]})
			}
		}
		var next []selection
		for _, s := range out {
			for _, c := range choices {
				n := selection{}
				for k, v := range s {
					n[k] = v
				}
				n[name] = c
				next = append(next, n)
			}
		}
		out = next
	}
	for _, s := range out {
		for _, name := range []string{"version", "bucket", "outcome", "kind"} {
			if _, ok := s[name]; !ok {
				s[name] = []string{allValue}
			}
		}
	}
	return out
}

// TestInterpolateAsGrafana pins the interpolation against what Grafana
// sends for the dashboard's variables.
func TestInterpolateAsGrafana(t *testing.T) {
	vars := dashboardVariables(t)
	sel := selection{"job": {"brainwire-eval"}, "version": {"sha256:ab12", "v1.2"}, "bucket": {allValue}, "outcome": {"low_confidence"}}
	for q, want := range map[string]string{
		`x{job=~"$job", v=~"$version"}[$__range]`: `x{job=~"brainwire-eval", v=~"(sha256:ab12|v1\\.2)"}[3600s]`,
		`x{b=~"$bucket", o=~"$outcome"}`:          `x{b=~".*", o=~"low_confidence"}`,
		`{ span.v =~ "${version:regex}" && span.b =~ "${bucket:regex}" && resource.service.name =~ "${job:regex}" }`: `{ span.v =~ "(sha256:ab12|v1\.2)" && span.b =~ ".*" && resource.service.name =~ "brainwire-eval" }`,
	} {
		if got := interpolate(q, vars, sel, rangeBuiltins(time.Hour)); got != want {
			t.Errorf("interpolate(%s)\n got %s\nwant %s", q, got, want)
		}
	}
}
