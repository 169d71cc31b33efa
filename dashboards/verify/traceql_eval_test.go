package verify

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire/telemetry/telemetrytest"
)

// spanFilter is the spanset filter of a dashboard TraceQL query, the part
// between braces: conditions joined by &&, each an intrinsic name or a
// span. or resource. attribute compared with a string. Tempo cannot run
// here; this evaluates the subset the dashboard uses, with Tempo's
// semantics where they matter: regular expressions match the whole value,
// and a condition on an attribute the span lacks is false.
type spanFilter []condition

type condition struct {
	field, op string
	value     string
	re        *regexp.Regexp
}

var (
	filterBody  = regexp.MustCompile(`^\{(.*)\}\s*(\|.*)?$`)
	conditionRE = regexp.MustCompile(`^\s*(name|span\.[\w.]+|resource\.[\w.]+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$`)
)

func parseSpanFilter(q string) (spanFilter, error) {
	m := filterBody.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return nil, fmt.Errorf("not { filter } | select(...): %s", q)
	}
	var f spanFilter
	for part := range strings.SplitSeq(m[1], "&&") {
		c := conditionRE.FindStringSubmatch(part)
		if c == nil {
			return nil, fmt.Errorf("condition %q is outside the subset this test evaluates", part)
		}
		v, err := strconv.Unquote(`"` + c[3] + `"`)
		if err != nil {
			return nil, fmt.Errorf("condition %q: %w", part, err)
		}
		cond := condition{field: c[1], op: c[2], value: v}
		if cond.op == "=~" || cond.op == "!~" {
			if cond.re, err = regexp.Compile(`^(?:` + v + `)$`); err != nil {
				return nil, fmt.Errorf("condition %q: %w", part, err)
			}
		}
		f = append(f, cond)
	}
	return f, nil
}

// matches reports whether the span passes every condition.
func (f spanFilter) matches(s *telemetrytest.Span) bool {
	for _, c := range f {
		var v any
		switch {
		case c.field == "name":
			v = s.Name
		case strings.HasPrefix(c.field, "span."):
			v = telemetrytest.Attr(s.Attributes, strings.TrimPrefix(c.field, "span."))
		default:
			v = telemetrytest.Attr(s.Resource.Values, strings.TrimPrefix(c.field, "resource."))
		}
		if v == nil {
			return false
		}
		sv := fmt.Sprint(v)
		var ok bool
		switch c.op {
		case "=":
			ok = sv == c.value
		case "!=":
			ok = sv != c.value
		case "=~":
			ok = c.re.MatchString(sv)
		case "!~":
			ok = !c.re.MatchString(sv)
		}
		if !ok {
			return false
		}
	}
	return true
}
