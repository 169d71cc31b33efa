package recorder_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/recorder"
)

func sampleFixture() *recorder.Fixture {
	resp := &recorder.Response{
		Ms: 3, Status: 200, Header: map[string]string{"Content-Type": "text/event-stream"},
		Events: []recorder.Event{
			recorder.NewEvent(4, "thread.run.created", []byte(`{"id":"run_1","instructions":"<b>&</b> \u2028"}`)),
			recorder.NewEvent(9, "thread.message.delta", []byte(`{"value":"李明 🍜"}`)),
			recorder.NewEvent(10, "odd", []byte("{ \"spaced\": true }")), // not compact: kept as text
			recorder.NewEvent(11, "lines", []byte("one\ntwo")),
			recorder.NewEvent(12, "bytes", []byte{0xff, 0xfe, 'x'}),
			recorder.NewEvent(13, "done", []byte("[DONE]")),
		},
		EndMs: 14, Error: "unexpected EOF", SplitAt: []int{5, 9},
	}
	resp.Partial = "event: thread.message.delta\ndata: {\"va"
	return &recorder.Fixture{
		Version: recorder.Version, Name: "sample", RecordedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Upstream: "simulator",
		Capture:  recorder.Capture{Kind: brainwire.KindText, Text: "Call mom"},
		Exchanges: []recorder.Exchange{{
			Request: recorder.Request{Method: "POST", Path: "/api/projects/p/threads/runs",
				Query: map[string]string{"api-version": "v1"}, Body: json.RawMessage(`{"stream":true}`)},
			Response: resp,
		}},
		Tools:  []recorder.ToolRun{{Round: 1, CallID: "call_1", Name: "file_capture", Arguments: json.RawMessage(`{"bucket":"People"}`), Output: json.RawMessage(`{"item_id":"x"}`)}},
		Result: recorder.Result{Outcome: "CLASSIFIED", ReasoningChunks: 2},
	}
}

func TestMarshalRoundTripKeepsEventDataExact(t *testing.T) {
	fx := sampleFixture()
	b, err := recorder.Marshal(fx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := recorder.Unmarshal(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(got, fx) {
		t.Fatalf("round trip changed the fixture:\n%s", b)
	}
	want := [][]byte{
		[]byte(`{"id":"run_1","instructions":"<b>&</b> \u2028"}`),
		[]byte(`{"value":"李明 🍜"}`),
		[]byte("{ \"spaced\": true }"),
		[]byte("one\ntwo"),
		{0xff, 0xfe, 'x'},
		[]byte("[DONE]"),
	}
	for i, ev := range got.Exchanges[0].Response.Events {
		if !bytes.Equal(ev.Payload(), want[i]) {
			t.Errorf("event %d data = %q, want %q", i, ev.Payload(), want[i])
		}
	}
	// One event per line, its JSON data verbatim (no HTML escaping).
	text := string(b)
	for _, line := range []string{
		`          {"ms":4,"event":"thread.run.created","data":{"id":"run_1","instructions":"<b>&</b> \u2028"}},`,
		`          {"ms":9,"event":"thread.message.delta","data":{"value":"李明 🍜"}},`,
		`          {"ms":13,"event":"done","data_text":"[DONE]"}`,
		`        "split_at": [5,9]`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("the file lacks the line\n%s\nfile:\n%s", line, text)
		}
	}
}

func TestWireFraming(t *testing.T) {
	ev := recorder.NewEvent(0, "a", []byte("one\ntwo"))
	if got := string(ev.AppendWire(nil)); got != "event: a\ndata: one\ndata: two\n\n" {
		t.Fatalf("wire = %q", got)
	}
}

func TestUnmarshalRejectsOtherVersionsAndUnknownFields(t *testing.T) {
	if _, err := recorder.Unmarshal([]byte(`{"version":2}`)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("version 2: err = %v", err)
	}
	if _, err := recorder.Unmarshal([]byte(`{"version":1,"capture":{"kind":"text","txet":"typo"}}`)); err == nil {
		t.Error("an unknown field was accepted")
	}
	// Replay answers with the recorded status: one HTTP cannot send would
	// panic the fake upstream.
	for _, status := range []int{0, 99, 1000, -200} {
		b := fmt.Appendf(nil, `{"version":1,"exchanges":[{"request":{"method":"GET","path":"/x"}},{"request":{"method":"GET","path":"/x"},"response":{"status":%d}}]}`, status)
		if _, err := recorder.Unmarshal(b); err == nil || !strings.Contains(err.Error(), "exchange 2") {
			t.Errorf("status %d: err = %v", status, err)
		}
	}
}

func TestWriteFileAtomicLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := recorder.WriteFile(path, sampleFixture()); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir holds %d entries, want only the fixture", len(entries))
	}
	if _, err := recorder.Load(path); err != nil {
		t.Fatal(err)
	}
	// A failed write leaves the old file and no temporary one.
	if err := recorder.WriteFileAtomic(filepath.Join(dir, "missing", "f.json"), []byte("x")); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

func TestFileName(t *testing.T) {
	for in, want := range map[string]string{
		"classified-people":    "classified-people.json",
		"20250101T000000Z-run": "20250101T000000Z-run.json",
		"../../etc/passwd":     "etc-passwd.json",
		"a b/c":                "a-b-c.json",
		"":                     "fixture.json",
	} {
		if got := recorder.FileName(in); got != want {
			t.Errorf("FileName(%q) = %q, want %q", in, got, want)
		}
	}
}
