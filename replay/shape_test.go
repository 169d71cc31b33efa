package replay_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/internal/recordings"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/sse"
)

// corpus loads the fixtures whose names match pattern.
func corpus(t *testing.T, pattern string) []*recorder.Fixture {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(fixturesDir, pattern))
	var out []*recorder.Fixture
	for _, path := range paths {
		fx, err := recorder.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fx)
	}
	return out
}

// objectKeys returns the sorted top-level keys of a JSON object, with
// agent_id read as assistant_id (one recording was edited by hand; the
// service sends assistant_id).
func objectKeys(data []byte) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if k == "agent_id" {
			k = "assistant_id"
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestCorpusHasTheServiceShape compares the corpus, recorded against the
// simulator, with the recordings of the real service: every event name the
// real streams use carries the same payload fields in the corpus, and the
// streams follow the same sequence rules.
func TestCorpusHasTheServiceShape(t *testing.T) {
	real := map[string][]string{} // event name -> payload keys
	for _, name := range recordings.Names {
		r := sse.NewReader(bytes.NewReader(recordings.Read(t, name)))
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if keys := objectKeys(ev.Data); keys != nil {
				real[string(ev.Name)] = keys
			}
		}
	}
	compared := map[string]bool{}
	for _, fx := range corpus(t, "*.json") {
		for i, ex := range fx.Exchanges {
			rs := ex.Response
			if rs == nil || !rs.IsStream() || isResponsesStream(rs) || strings.HasSuffix(ex.Request.Path, "/run_sse") {
				continue // another API's (responses_shape_test.go, adkshape_test.go)
			}
			names := make([]string, len(rs.Events))
			for j, ev := range rs.Events {
				names[j] = ev.Name
				want, ok := real[ev.Name]
				if !ok {
					continue
				}
				compared[ev.Name] = true
				if got := objectKeys(ev.Payload()); !slices.Equal(got, want) {
					t.Errorf("%s: exchange %d: %s has fields %v; the service sends %v", fx.Name, i+1, ev.Name, got, want)
				}
			}
			whole := rs.Error == "" && rs.Partial == "" && !strings.Contains(strings.Join(names, " "), "error")
			last := names[len(names)-1]
			// Once the run is over the provider stops reading: the
			// service's trailing done may arrive after the client closed.
			stoppedAfterEnd := rs.Closed && (last == "thread.run.completed" || last == "thread.run.failed")
			if whole && last != "done" && !stoppedAfterEnd {
				t.Errorf("%s: exchange %d: the stream ends with %s, not done", fx.Name, i+1, last)
			}
			if whole && slices.Contains(names, "thread.run.requires_action") && names[len(names)-2] != "thread.run.requires_action" {
				t.Errorf("%s: exchange %d: events after requires_action: %v", fx.Name, i+1, names[max(0, len(names)-3):])
			}
			if strings.HasSuffix(ex.Request.Path, "/submit_tool_outputs") && names[0] != "thread.run.step.completed" {
				t.Errorf("%s: exchange %d: the continuation starts with %s, not the tool step's thread.run.step.completed", fx.Name, i+1, names[0])
			}
		}
	}
	seen := slices.Sorted(maps.Keys(compared))
	t.Logf("compared payload fields of %d event types: %v", len(seen), seen)
	if len(seen) < 8 {
		t.Errorf("only %d event types in common with the service recordings", len(seen))
	}
}
