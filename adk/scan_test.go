package adk

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/adk/adktest"
)

// normalized makes events comparable with reflect.DeepEqual: an empty
// slice and a nil one say the same.
func normalized(ev Event) Event {
	if len(ev.Parts) == 0 {
		ev.Parts = nil
	} else {
		ev.Parts = slices.Clone(ev.Parts)
	}
	if len(ev.LongRunningToolIDs) == 0 {
		ev.LongRunningToolIDs = nil
	}
	return ev
}

// checkFastPath fails when the fast path accepts data and decodes it
// differently from encoding/json. It reports whether the fast path took it.
func checkFastPath(t *testing.T, data []byte) bool {
	t.Helper()
	var d fastDecoder
	fast, ok := d.decode(data)
	if !ok {
		return false
	}
	slow, err := decodeJSON(data)
	if err != nil {
		t.Fatalf("%s\nthe fast path decodes it, encoding/json fails: %v", data, err)
	}
	if a, b := normalized(fast), normalized(slow); !reflect.DeepEqual(a, b) {
		t.Fatalf("%s\nfast path:     %+v\nencoding/json: %+v", data, a, b)
	}
	return true
}

// turnFrames are events as the API server streams them: thoughts, text,
// a long-running call, usage, non-ASCII.
func turnFrames() []string {
	turns := []adktest.Turn{
		{InvocationID: "e-1", EventID: "ev-1", Thoughts: []string{"**Classifying**\n\nThis is", " about \"Mom\" 🎂"},
			Texts: []string{"Filing it."}, Calls: []adktest.FunctionCall{{ID: "adk-1", Name: "file_capture", Args: `{"text":"Call mom","bucket":"People"}`}},
			Usage: &adktest.Usage{Prompt: 412, Candidates: 41, Thoughts: 88, Total: 541}},
		{InvocationID: "e-1", EventID: "ev-2", Texts: []string{"Filed to", " People."}, Usage: &adktest.Usage{Prompt: 590, Candidates: 9, Total: 599}},
		{InvocationID: "e-2", EventID: "ev-3", ErrorCode: "SAFETY", ErrorMessage: "blocked"},
	}
	var out []string
	for _, tr := range turns {
		for _, f := range tr.Frames() {
			out = append(out, f.Data)
		}
	}
	out = append(out,
		adktest.FunctionResponseEvent("e-1", "ev-9", "adk-2", "lookup", map[string]any{"ok": true}).Data,
		adktest.ErrorFrame("ServerError", "503 UNAVAILABLE. {'error': {'code': 503}} – überlastet").Data,
	)
	return out
}

// edgeFrames probe where the fast path must decline or agree.
var edgeFrames = []string{
	`{"content":{"parts":[{"text":"a"}],"role":"model"},"partial":true}`,
	`{"content":{"parts":[{"text":"a\nb\u00e9\ud83d\ude00"}]},"partial":true,"invocationId":"e-\u0031"}`,
	`{"content":{"parts":[{"text":"x","thought":true,"thoughtSignature":"-__-AQ=="}]},"partial":true}`,
	`{"content":{"parts":[]},"partial":false}`,
	`{"content":{},"partial":true}`,
	`{"content":null,"partial":true}`,
	`{"content":{"parts":null}}`,
	`{"content":{"parts":[null]}}`,
	`{"content":{"parts":[{"text":null}]}}`,
	`{"content":{"parts":[{"text":"a"}]},"Partial":true}`,
	`{"content":{"parts":[{"TEXT":"a"}]},"partial":true}`,
	`{"content":{"parts":[{"text":"a","text":"b"}]},"partial":true}`,
	`{"content":{"parts":[{"text":"a"}]},"content":{"role":"model"}}`,
	`{"partial":true,"partial":false}`,
	`{"ſartial":true}`,
	`{"p\u0061rtial":true}`,
	`{"partial":"yes"}`,
	`{"partial":null}`,
	`{"usageMetadata":{"promptTokenCount":1.0}}`,
	`{"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12,"promptTokensDetails":[{"modality":"TEXT","tokenCount":12}]}}`,
	`{"usageMetadata":{"promptTokenCount":9223372036854775808}}`,
	`{"usageMetadata":{"PromptTokenCount":3}}`,
	`{"usageMetadata":null}`,
	`{"actions":{"stateDelta":{},"skipSummarization":true}}`,
	`{"actions":{"SkipSummarization":true}}`,
	`{"actions":[]}`,
	`{"longRunningToolIds":["adk-1"]}`,
	`{"longRunningToolIds":[]}`,
	`{"content":{"parts":[{"functionCall":{"id":"adk-1","name":"f","args":{"a":1}}}]},"longRunningToolIds":["adk-1"]}`,
	`{"error":"boom"}`,
	`{"error":null,"content":{"parts":[{"text":"a"}]}}`,
	`{"error":{"message":"from a proxy"}}`,
	`{"errorCode":"MAX_TOKENS","errorMessage":"cut"}`,
	`{"invocationId":5}`,
	`{"nodeInfo":{"path":"` + strings.Repeat("[", 70) + `"}}`,
	`{"deep":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	`{"content":{"parts":[{"text":"a"}]}} trailing`,
	`[]`, `null`, `"x"`, `{}`, ``, `{`,
	"{\"content\":{\"parts\":[{\"text\":\"bad \xff utf8\"}]},\"partial\":true}",
	// Near the layout of a streamed chunk, which has its own path.
	`{"modelVersion":"m","content":{"parts":[{"text":"x","thought":true}],"role":"model"},"partial":true,"invocationId":"e","author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"nodeInfo":{"path":"a@1"},"id":"i","timestamp":1.5}`,
	`{"modelVersion":"m","content":{"parts":[{"text":"x","thought":false}],"role":"model"},"partial":true,"invocationId":"e","author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"i","timestamp":1.5}`,
	`{"modelVersion":"m","content":{"parts":[{"text":"x\u00e9\n"}],"role":"model"},"partial":true,"invocationId":"e\u0031","author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"nodeInfo":{"path":[1,{"x":null}]},"id":{"i":1},"timestamp":"t"}  `,
	`{"modelVersion":"m","content":{"parts":[{"text":"x"}],"role":"model"},"partial":true,"invocationId":"e","author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"i","timestamp":1.5,"partial":false}`,
	`{"modelVersion":"m","content":{"parts":[{"text":"x"}],"role":"model"},"partial":true,"invocationId":"e","author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"i","timestamp":1.}`,
	`{"modelVersion":"m","content":{"parts":[{"text":"x"}],"role":"model"},"partial":true,"invocationId":"e","author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"i","timestamp":1}}`,
	`{"modelVersion":"m","content":{"parts":[{"text":"x"}],"role":"model"},"partial":true,"invocationId":5,"author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"i","timestamp":1}`,
}

func TestFastPathAgreesWithEncodingJSON(t *testing.T) {
	taken := 0
	for _, f := range append(turnFrames(), edgeFrames...) {
		if checkFastPath(t, []byte(f)) {
			taken++
		}
	}
	// The streamed chunks must not all be left to encoding/json.
	if taken < 8 {
		t.Fatalf("the fast path took only %d of the frames", taken)
	}
}

func TestFastPathTakesStreamedChunks(t *testing.T) {
	tr := adktest.Turn{InvocationID: "e-1", EventID: "ev-1", Thoughts: []string{"a", "b\n\"c\"", "ü"}, Texts: []string{"d"},
		Usage: &adktest.Usage{Prompt: 3, Candidates: 1, Total: 4}}
	for _, f := range tr.Partials() {
		var d fastDecoder
		if _, ok := d.decode([]byte(f.Data)); !ok {
			t.Errorf("the fast path declines a streamed chunk: %s", f.Data)
		}
	}
}

// TestKnownKeysAreTheWireStruct holds the fast path's member lists and
// the structs encoding/json decodes into together.
func TestKnownKeysAreTheWireStruct(t *testing.T) {
	for name, typ := range map[string]reflect.Type{
		"event":   reflect.TypeFor[wireEvent](),
		"content": reflect.TypeFor[wireContent](),
		"part":    reflect.TypeFor[wirePart](),
		"usage":   reflect.TypeFor[wireUsage](),
		"actions": reflect.TypeFor[wireActions](),
	} {
		var tags []string
		for f := range typ.Fields() {
			tags = append(tags, strings.Split(f.Tag.Get("json"), ",")[0])
		}
		if !slices.Equal(tags, knownKeys[name]) {
			t.Errorf("%s: the fast path knows %q, the wire struct has %q", name, knownKeys[name], tags)
		}
	}
}

func TestFastPathAllocatesOnlyTheText(t *testing.T) {
	frame := []byte(adktest.Turn{InvocationID: "e-0b7c", EventID: "9d1e", Thoughts: []string{" a", " b"}}.Partials()[1].Data)
	var d fastDecoder
	allocs := testing.AllocsPerRun(200, func() {
		ev, ok := d.decode(frame)
		if !ok || ev.Parts[0].Text != " b" {
			t.Fatalf("not decoded: %+v", ev)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per chunk, want 1 (its text)", allocs)
	}
}

func TestDecodePayload(t *testing.T) {
	tests := []struct {
		name, data string
		want       *StreamError
		wantErr    bool
	}{
		{"error frame", adktest.ErrorFrame("ValueError", `Function call not found for function response ids: {'adk-9'}`).Data,
			&StreamError{Type: "ValueError", Message: `Function call not found for function response ids: {'adk-9'}`}, false},
		{"1.24 error frame", `{"error": "boom"}`, &StreamError{Message: "boom"}, false},
		{"pre-1.23 frame with a quote", adktest.LegacyErrorFrame(`400 INVALID_ARGUMENT. {'message': "bad \d"}`).Data,
			&StreamError{Message: `400 INVALID_ARGUMENT. {'message': "bad \d"}`}, false},
		{"pre-1.23 frame cut by a newline", `{"error": "first line of the message`, &StreamError{Message: "first line of the message"}, false},
		{"a proxy's error object", `{"error":{"code":502,"message":"bad gateway"}}`, &StreamError{Message: "bad gateway"}, false},
		{"an error object without a message", `{"error":{"code":502,"upstream":"10.0.0.7"}}`, nil, true},
		{"an error that is a number", `{"error":502}`, nil, true},
		{"an error without a message, with its details", `{"error":{},"error_details":{"error_type":"ServerError","error_message":"overloaded"}}`,
			&StreamError{Type: "ServerError", Message: "overloaded"}, false},
		{"not an event", `<html>oops</html>`, nil, true},
		{"null", `null`, nil, true},
		{"an array", `[{"partial":true}]`, nil, true},
		{"a wrong type", `{"partial":"yes"}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := decodePayload([]byte(tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(ev.Err, tt.want) {
				t.Fatalf("got %+v, want %+v", ev.Err, tt.want)
			}
		})
	}
}

// The chunks in the middle of a model call, which carry no usage, take
// the layout path; others are still left to the general walk, not to
// encoding/json.
func TestLayoutTakesSteadyChunks(t *testing.T) {
	tr := adktest.Turn{InvocationID: "e-1", EventID: "ev-1", Thoughts: []string{"a", " b\n\"c\" 🎂", "c"}, Texts: []string{" d", " e"},
		Usage: &adktest.Usage{Prompt: 3, Candidates: 1, Total: 4}}
	partials := tr.Partials()
	for i, f := range partials {
		var d fastDecoder
		d.sc.Reset([]byte(f.Data))
		middle := i > 0 && i < len(partials)-1
		if got := d.layout(); got != middle {
			t.Errorf("chunk %d: layout %v, want %v: %s", i, got, middle, f.Data)
		}
		checkFastPath(t, []byte(f.Data))
	}
	// ADK 1.x: no nodeInfo.
	old := `{"modelVersion":"gemini-2.0-flash","content":{"parts":[{"text":"x"}],"role":"model"},"partial":true,"invocationId":"e-1","author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"i","timestamp":1.5}`
	var d fastDecoder
	d.sc.Reset([]byte(old))
	if !d.layout() {
		t.Error("a 1.x chunk does not take the layout path")
	}
	checkFastPath(t, []byte(old))
}
