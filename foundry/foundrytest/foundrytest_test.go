package foundrytest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/brainwire/brainwire/internal/recordings"

	"github.com/brainwire/brainwire/foundry/foundrytest"
)

// recordingTB captures the failures a Server reports.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestUnexpectedAndMissingCalls(t *testing.T) {
	rtb := &recordingTB{}
	var status int
	t.Run("server", func(t *testing.T) {
		rtb.TB = t
		srv := foundrytest.NewServer(rtb,
			foundrytest.Expect("POST /threads/runs", foundrytest.Stream(foundrytest.Done())),
		)
		resp := post(t, srv.Endpoint()+"/threads/thread_1/runs?api-version=v1", `{"assistant_id":"a"}`)
		status = resp.StatusCode
	})
	if status != http.StatusInternalServerError {
		t.Fatalf("status %d", status)
	}
	if len(rtb.errs) != 2 || !strings.Contains(rtb.errs[0], "unexpected call") || !strings.Contains(rtb.errs[1], "never came") {
		t.Fatalf("reported %q", rtb.errs)
	}
}

func TestScriptRecordsRequests(t *testing.T) {
	srv := foundrytest.NewServer(t,
		foundrytest.Expect("POST /threads/{t}/runs/{r}/submit_tool_outputs", foundrytest.Stream(
			foundrytest.Event{Name: "multi", Data: "a\nb"}, foundrytest.Done())),
	)
	resp := post(t, srv.Endpoint()+"/threads/th/runs/ru/submit_tool_outputs?api-version=v1", `{"tool_outputs":[],"stream":true}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" ||
		string(body) != "event: multi\ndata: a\ndata: b\n\nevent: done\ndata: [DONE]\n\n" {
		t.Fatalf("%s\n%q", resp.Header, body)
	}
	// Cancel and get-run are answered outside the script.
	cancel := post(t, srv.Endpoint()+"/threads/th/runs/ru/cancel?api-version=v1", `{}`)
	var run map[string]any
	json.NewDecoder(cancel.Body).Decode(&run)
	if cancel.StatusCode != 200 || run["status"] != "cancelling" || run["id"] != "ru" || run["thread_id"] != "th" {
		t.Fatalf("cancel answered %d %v", cancel.StatusCode, run)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/threads/th/runs/ru/submit_tool_outputs" || reqs[0].Query.Get("api-version") != "v1" ||
		reqs[0].Body["stream"] != true || len(srv.Cancels()) != 1 || len(srv.Pending()) != 0 {
		t.Fatalf("requests %v", reqs)
	}
}

// TestPayloadsMatchRecordings checks that built objects have the fields of
// the recorded ones, in the same order.
func TestPayloadsMatchRecordings(t *testing.T) {
	recorded := map[string][]string{} // event name -> top-level keys
	for _, f := range recordings.Names {
		b := recordings.Read(t, f)
		for block := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n\n") {
			name, data, _ := strings.Cut(block, "\n")
			name = strings.TrimPrefix(name, "event: ")
			if _, ok := recorded[name]; !ok && name != "done" {
				recorded[name] = keys(t, strings.TrimPrefix(data, "data: "))
			}
		}
	}
	if len(recorded) != 13 {
		t.Fatalf("found %d event names in the recordings, want 13", len(recorded))
	}
	c := foundrytest.NewClassify("thread_1", "run_1", 2)
	r := c.Run
	built := map[string]foundrytest.Event{}
	for _, ev := range append(c.Stream(), c.Continuation()...) {
		if _, ok := built[ev.Name]; !ok {
			built[ev.Name] = ev
		}
	}
	built["thread.run.created"] = r.Created()
	for name, want := range recorded {
		ev, ok := built[name]
		if !ok {
			t.Errorf("no builder covers %s", name)
			continue
		}
		if got := keys(t, ev.Data); !slices.Equal(got, want) {
			t.Errorf("%s keys:\n got  %v\n want %v", name, got, want)
		}
	}
}

// keys returns the top-level keys of a JSON object in order, reading the
// hand-edited agent_id of the send_email recording as assistant_id.
func keys(t *testing.T, data string) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(data)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %.80s", data)
	}
	var out []string
	for dec.More() {
		tok, _ := dec.Token()
		k := tok.(string)
		if k == "agent_id" {
			k = "assistant_id"
		}
		out = append(out, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
