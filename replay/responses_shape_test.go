package replay_test

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
)

// isResponsesStream reports whether a recorded stream is the Responses
// API's.
func isResponsesStream(rs *recorder.Response) bool {
	return len(rs.Events) > 0 && (strings.HasPrefix(rs.Events[0].Name, "response.") || rs.Events[0].Name == "error")
}

// specKeys returns the payload keys of each event type of the Responses
// API's published examples (responses/testdata), obfuscation aside: the
// service adds it to delta events, the examples predate it.
func specKeys(t *testing.T) map[string][]string {
	t.Helper()
	keys := map[string][]string{}
	for _, name := range []string{"spec-function-call.sse", "spec-continuation.sse"} {
		f, err := os.Open(filepath.Join("..", "responses", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var typ struct{ Type string }
				json.Unmarshal([]byte(data), &typ)
				keys[typ.Type] = payloadKeys([]byte(data))
			}
		}
		f.Close()
	}
	return keys
}

func payloadKeys(data []byte) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	var keys []string
	for k := range m {
		if k != "obfuscation" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// TestResponsesCorpusHasTheSpecShape holds the corpus's Responses API
// streams to the published examples and the API's streaming rules: the
// examples' event types carry the same fields in the streams recorded
// against the simulator; in every stream, event names equal data.type; sequence numbers run from 0;
// response.created and response.in_progress open every stream; a stream
// that was not cut ends with its one terminal event.
func TestResponsesCorpusHasTheSpecShape(t *testing.T) {
	spec := specKeys(t)
	compared := map[string]bool{}
	streams := 0
	for _, fx := range corpus(t, "*.json") {
		for i, ex := range fx.Exchanges {
			rs := ex.Response
			if rs == nil || !rs.IsStream() || !isResponsesStream(rs) {
				continue
			}
			streams++
			for j, ev := range rs.Events {
				var d struct {
					Type string `json:"type"`
					Seq  *int   `json:"sequence_number"`
				}
				if err := json.Unmarshal(ev.Payload(), &d); err != nil || d.Type != ev.Name || d.Seq == nil || *d.Seq != j {
					t.Fatalf("%s: exchange %d, event %d: %s %s", fx.Name, i+1, j, ev.Name, ev.Payload())
				}
				// The examples are what the simulator is held to. The
				// streams the services sent (responses-real-*, held to their
				// recordings by TestPublishedFixtures) differ from them:
				// their response.function_call_arguments.done has no name.
				if want, ok := spec[ev.Name]; ok && fx.Upstream == "simulator" && ev.Name != "response.created" && ev.Name != "response.in_progress" && ev.Name != "response.completed" {
					compared[ev.Name] = true
					got := payloadKeys(ev.Payload())
					if ev.Name == "response.function_call_arguments.done" && !slices.Contains(got, "name") {
						// The simulator now writes it as the services do;
						// fixtures recorded before have the examples' name.
						want = slices.DeleteFunc(slices.Clone(want), func(k string) bool { return k == "name" })
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s: exchange %d: %s has fields %v; the examples have %v", fx.Name, i+1, ev.Name, got, want)
					}
				}
			}
			if len(rs.Events) < 2 || rs.Events[0].Name != "response.created" || rs.Events[1].Name != "response.in_progress" {
				t.Errorf("%s: exchange %d does not open with created and in_progress", fx.Name, i+1)
			}
			if rs.Error != "" || rs.Partial != "" {
				continue // cut
			}
			for j, ev := range rs.Events {
				terminal := ev.Name == "response.completed" || ev.Name == "response.failed" || ev.Name == "response.incomplete" || ev.Name == "error"
				if terminal != (j == len(rs.Events)-1) {
					t.Errorf("%s: exchange %d: event %d of %d is %s", fx.Name, i+1, j, len(rs.Events), ev.Name)
				}
			}
		}
	}
	seen := slices.Sorted(maps.Keys(compared))
	t.Logf("%d Responses API streams; compared payload fields of %d event types: %v", streams, len(seen), seen)
	if streams < 16 || len(seen) < 10 {
		t.Errorf("%d streams, %d event types compared with the examples", streams, len(seen))
	}
}

// TestResponsesGoldensMatchClassic: the phone gets the same bytes from a
// capture whichever API the agent runs on, and whether or not a refused
// call was sent again. Each Responses API fixture
// records the same capture as a classic one; their SSE goldens are equal,
// but for the id of the upstream conversation and the service's own words
// in an ERROR.
func TestResponsesGoldensMatchClassic(t *testing.T) {
	conversation := regexp.MustCompile(`"foundryConversationId":"(thread|conv|resp)_[A-Za-z0-9]+"`)
	upstreamWords := regexp.MustCompile(`("message":"The agent run failed: )[^"]*"`)
	mask := func(b []byte) string {
		s := conversation.ReplaceAllString(string(b), `"foundryConversationId":"<id>"`)
		return upstreamWords.ReplaceAllString(s, `$1<upstream>"`)
	}
	pairs := map[string]string{
		"classified-people": "responses-classified-people", "low-confidence": "responses-low-confidence",
		"misunderstood": "responses-misunderstood", "no-tool-call": "responses-no-tool-call", "run-failed": "responses-failed",
		"error-event": "responses-error-event", "follow-up": "responses-follow-up", "voice": "responses-voice",
		"two-tool-calls": "responses-two-tool-calls", "invalid-bucket-retry": "responses-invalid-bucket-retry",
		"stream-cut-mid-event": "responses-stream-cut-mid-event", "non-ascii-split": "responses-non-ascii-split",
		"upstream-429": "responses-upstream-429", "reasoning-1000-chunks": "responses-reasoning-1000-chunks",
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(fixturesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for classic, current := range pairs {
		a, b := mask([]byte(read(classic+".sse.golden"))), mask([]byte(read(current+".sse.golden")))
		if a != b {
			t.Errorf("%s and %s differ:\n%s", classic, current, replay.Diff(a, b, classic, current))
		}
	}
	// A 429 the server sent again past is invisible to the phone: the
	// recording of it gives the phone the bytes the same capture gets
	// without it. (AG-UI's stream also shows the agent's tool call ids,
	// which the simulator draws from the fixture's name.)
	for _, suffix := range []string{".sse.golden", ".v1.golden"} {
		if read("responses-upstream-429-retried"+suffix) != read("responses-classified-people"+suffix) {
			t.Errorf("%s: the retried capture's stream differs from the one without the 429", suffix)
		}
	}
}
