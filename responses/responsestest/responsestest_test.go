package responsestest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	rt "github.com/brainwire/brainwire/responses/responsestest"
)

// TestTurnNumbersEvents: every event's data names its type as the event
// line does, and sequence numbers run 0, 1, 2, ...
func TestTurnNumbersEvents(t *testing.T) {
	evs := rt.NewTurn("resp_1", rt.InConversation("conv_1")).Reasoning("rs", "a", "b").Message("m", "c").
		FunctionCall("fc", "call", "f", `{"x":"李明"}`).Complete(rt.Usage{Input: 1, Output: 2, Reasoning: 1}).Events()
	for i, ev := range evs {
		var d struct {
			Type string `json:"type"`
			Seq  *int   `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
			t.Fatal(err)
		}
		if d.Type != ev.Name || d.Seq == nil || *d.Seq != i {
			t.Fatalf("event %d: %s %s", i, ev.Name, ev.Data)
		}
	}
	if w := evs[0].WireCRLF(); !strings.HasPrefix(w, "event: response.created\r\ndata: {") || !strings.HasSuffix(w, "}\r\n\r\n") {
		t.Fatalf("CRLF wire %q", w)
	}
}

// TestChunkedStream: a chunked CRLF stream arrives whole, byte for byte.
func TestChunkedStream(t *testing.T) {
	evs := rt.NewTurn("resp_1").Message("m", "🍜 李明").Complete(rt.Usage{}).Events()
	srv := rt.NewServer(t, rt.Expect("POST /responses", rt.Stream(evs...).CRLF().Chunked(5)))
	resp, err := srv.Client().Post(srv.BaseURL()+"/responses", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	var want strings.Builder
	for _, ev := range evs {
		want.WriteString(ev.WireCRLF())
	}
	if string(got) != want.String() || resp.StatusCode != http.StatusOK {
		t.Fatalf("got %d %q", resp.StatusCode, got)
	}
}

// TestUnexpectedCall: a call off the script fails the test and is
// answered 500.
func TestUnexpectedCall(t *testing.T) {
	fake := &recordingTB{TB: t}
	// The scripted call never comes: the server says so when the test
	// ends (cleanups run last first, so this one is registered first).
	t.Cleanup(func() {
		if len(fake.errors) != 2 || !strings.Contains(fake.errors[1], "never came") {
			t.Errorf("errors at the end: %v", fake.errors)
		}
	})
	srv := rt.NewServer(fake, rt.Expect("POST /conversations", rt.JSON(200, `{"id":"c"}`)))
	resp, err := srv.Client().Get(srv.BaseURL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || len(fake.errors) != 1 {
		t.Fatalf("status %d, errors %v", resp.StatusCode, fake.errors)
	}
	if p := srv.Pending(); len(p) != 1 {
		t.Fatalf("pending %v", p)
	}
}

// recordingTB keeps the errors reported to it instead of failing.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
