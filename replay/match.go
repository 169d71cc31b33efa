package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/recorder"
)

// MismatchError is a request that differs from the recorded one.
type MismatchError struct {
	// Index is the request's position, from 0.
	Index int
	// Diff shows the recorded request against the one made, in the
	// normalized form they are compared in.
	Diff string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("request #%d does not match the recording (- recorded, + replayed):\n%s", e.Index+1, e.Diff)
}

// uuidPattern matches generated ids: tool outputs carry the ids of the
// documents the server filed, which depend on how ids are generated.
var uuidPattern = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// operationPath drops the project prefix (/api/projects/<name>), so that a
// fixture recorded against one project replays against any.
func operationPath(p string) string {
	const prefix = "/api/projects/"
	if strings.HasPrefix(p, prefix) {
		rest := p[len(prefix):]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i:]
		}
		return "/"
	}
	return p
}

// projectPrefix is the part of a recorded path before the operation.
func projectPrefix(p string) string {
	return strings.TrimSuffix(p, operationPath(p))
}

// requestView is the part of a request that must match the recording.
type requestView struct {
	Request string            `json:"request"`
	Query   map[string]string `json:"query,omitempty"`
	Body    any               `json:"body,omitempty"`
}

// matchRequest compares a request with the recorded one: method,
// operation path, query (a redacted value need only be present), and the
// body after normalization (tools by name, ids masked, tool outputs
// compared as JSON).
func matchRequest(i int, rec recorder.Request, r *http.Request, body []byte) error {
	want := requestView{Request: rec.Method + " " + operationPath(rec.Path), Query: rec.Query, Body: normalizeBody(rec.BodyBytes())}
	got := requestView{Request: r.Method + " " + operationPath(r.URL.Path), Body: normalizeBody(body)}
	if q := r.URL.Query(); len(q) > 0 {
		got.Query = map[string]string{}
		for k, v := range q {
			got.Query[k] = strings.Join(v, ",")
			if strings.Contains(rec.Query[k], recorder.Redacted) {
				got.Query[k] = rec.Query[k]
			}
		}
	}
	a, b := render(want), render(got)
	if a == b {
		return nil
	}
	return &MismatchError{Index: i, Diff: Diff(a, b, "recorded", "replayed")}
}

func render(v requestView) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("unencodable request: %v", err)
	}
	return buf.String()
}

func normalizeBody(b []byte) any {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var x any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return maskIDs(string(b))
	}
	return normalize(x)
}

func normalize(x any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, val := range v {
			switch k {
			case "tools":
				v[k] = toolNames(val)
			case "metadata":
				// The tag of a create on a thread is a key of its own
				// each time; recordings made before it have none.
				if md, ok := val.(map[string]any); ok {
					delete(md, foundry.MetadataCall)
					if len(md) == 0 {
						delete(v, k)
						continue
					}
				}
				v[k] = normalize(val)
			case "output":
				if s, ok := val.(string); ok {
					v[k] = normalizeBody([]byte(s))
					continue
				}
				v[k] = normalize(val)
			default:
				v[k] = normalize(val)
			}
		}
		return v
	case []any:
		for i := range v {
			v[i] = normalize(v[i])
		}
		return v
	case string:
		return maskIDs(v)
	}
	return x
}

// toolNames reduces tool definitions to their names: descriptions and
// schemas may be reworded without changing what the recording tests.
func toolNames(x any) any {
	list, ok := x.([]any)
	if !ok {
		return x
	}
	names := make([]string, 0, len(list))
	for _, t := range list {
		m, _ := t.(map[string]any)
		fn, _ := m["function"].(map[string]any)
		name, _ := fn["name"].(string)
		if fn == nil {
			name, _ = m["name"].(string) // the Responses API's flat shape
		}
		typ, _ := m["type"].(string)
		names = append(names, typ+":"+name)
	}
	slices.Sort(names)
	return names
}

func maskIDs(s string) string {
	return uuidPattern.ReplaceAllString(s, "<id>")
}
