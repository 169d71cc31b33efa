package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
	oai "github.com/openai/openai-go/v3/responses"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/responses"
	rt "github.com/brainwire/brainwire/responses/responsestest"
	"github.com/brainwire/brainwire/sse"
)

// tokens are delta texts the size a model streams them.
var tokens = strings.Fields("The capture mentions calling Sarah about the offsite next week , " +
	"which is about a person in their life ; the People bucket fits best with high confidence .")

// stream is one response as the API streams it: n reasoning summary
// deltas of token size, then a function call and response.completed.
func stream(n int) (body []byte, events int) {
	deltas := make([]string, n)
	for i := range deltas {
		deltas[i] = " " + tokens[i%len(tokens)]
	}
	evs := rt.NewTurn("resp_1", rt.InConversation("conv_1")).Reasoning("rs_1", deltas...).
		FunctionCall("fc_1", "call_1", "file_capture", `{"text":"Call Sarah","bucket":"People","confidence":0.9,"status":"classified"}`).
		Complete(rt.Usage{Input: 1000, Output: 9000, Reasoning: 8000}).Events()
	var b bytes.Buffer
	for _, e := range evs {
		b.WriteString(e.Wire())
	}
	return b.Bytes(), len(evs)
}

// decodeBrainwire reads the stream with brainwire's decoder and returns
// the text it carried and the tool calls.
func decodeBrainwire(tb testing.TB, body []byte) (text int, calls int) {
	d := responses.NewDecoder(bytes.NewReader(body))
	for {
		ev, err := d.Next()
		if errors.Is(err, io.EOF) {
			return text, calls
		}
		if err != nil {
			tb.Fatal(err)
		}
		switch ev.Kind {
		case brainwire.AgentTextChunk:
			text += len(ev.Text)
		case brainwire.AgentToolCall:
			calls++
		}
	}
}

// decodeSDK reads the stream with the SDK's stream decoder and event
// union, taking the same fields.
func decodeSDK(tb testing.TB, body []byte) (text int, calls int) {
	resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
	s := ssestream.NewStream[oai.ResponseStreamEventUnion](ssestream.NewDecoder(resp), nil)
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.reasoning_summary_text.delta", "response.output_text.delta":
			text += len(ev.Delta)
		case "response.output_item.done":
			if ev.Item.Type == "function_call" {
				calls++
			}
		}
	}
	if err := s.Err(); err != nil {
		tb.Fatal(err)
	}
	return text, calls
}

// decodeStdlib reads the stream with brainwire's sse reader and
// encoding/json into a struct of the fields the text events need.
func decodeStdlib(tb testing.TB, body []byte) (text int, calls int) {
	r := sse.NewReader(bytes.NewReader(body))
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return text, calls
		}
		if err != nil {
			tb.Fatal(err)
		}
		var d struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
			Item  *struct {
				Type string `json:"type"`
			} `json:"item"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			tb.Fatal(err)
		}
		switch {
		case d.Type == "response.reasoning_summary_text.delta":
			text += len(d.Delta)
		case d.Type == "response.output_item.done" && d.Item != nil && d.Item.Type == "function_call":
			calls++
		}
	}
}

// TestDecodersAgree: the three decoders read the same text and calls.
func TestDecodersAgree(t *testing.T) {
	body, _ := stream(500)
	a, ac := decodeBrainwire(t, body)
	b, bc := decodeSDK(t, body)
	c, cc := decodeStdlib(t, body)
	if a != b || a != c || ac != 1 || bc != 1 || cc != 1 || a == 0 {
		t.Fatalf("text %d %d %d, calls %d %d %d", a, b, c, ac, bc, cc)
	}
}

// BenchmarkDecode: one response of 10,000 token-sized reasoning summary
// deltas (10,023 events) decoded by brainwire's decoder, by the SDK's, and
// by the sse reader with encoding/json. Run with -cpu 1.
func BenchmarkDecode(b *testing.B) {
	body, events := stream(10000)
	for _, d := range []struct {
		name   string
		decode func(testing.TB, []byte) (int, int)
	}{
		{"brainwire", decodeBrainwire},
		{"openai-go", decodeSDK},
		{"sse+encoding-json", decodeStdlib},
	} {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				d.decode(b, body)
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*events), "ns/event")
			// On a shared machine the wall clock counts the time other
			// processes had the core; the process's CPU time does not.
			b.ReportMetric(float64(b.N*events)/cpu.Seconds(), "events/cpu-s")
			b.ReportMetric(testing.AllocsPerRun(1, func() { d.decode(b, body) })/float64(events), "allocs/event")
		})
	}
}
