package adk

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/adk/adktest"
	"github.com/brainwire/brainwire/recorder"
)

// fixturePayloads returns the data of every event of the recorded ADK
// fixtures.
func fixturePayloads(tb testing.TB) [][]byte {
	paths, err := filepath.Glob(filepath.Join("..", "fixtures", "adk-*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, p := range paths {
		fx, err := recorder.Load(p)
		if err != nil {
			tb.Fatal(err)
		}
		for _, ex := range fx.Exchanges {
			if ex.Response == nil {
				continue
			}
			for _, ev := range ex.Response.Events {
				out = append(out, ev.Payload())
			}
		}
	}
	return out
}

// FuzzDecodeEvent: no payload makes the decoder panic, alone or inside a
// stream, and every failure keeps its cause.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range append(turnFrames(), edgeFrames...) {
		f.Add([]byte(s))
	}
	seen := map[string]bool{}
	for _, p := range fixturePayloads(f) {
		if !seen[string(p)] {
			seen[string(p)] = true
			f.Add(p)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = decodePayload(data)

		var body bytes.Buffer
		body.WriteString("data: ")
		body.Write(data)
		body.WriteString("\n\ndata: ")
		body.Write(data)
		body.WriteString("\r\n\r\n")
		d := NewDecoder(&body)
		d.ExpectClientTools("file_capture")
		for range 64 {
			if _, err := d.Next(); err != nil {
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && errors.Unwrap(err) == nil {
					t.Fatalf("an error without its cause: %v", err)
				}
				return
			}
		}
	})
}

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
	`{"partial":"yes"}`,
	`{"partial":null}`,
	`{"usageMetadata":{"promptTokenCount":1.0}}`,
	`{"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12,"promptTokensDetails":[{"modality":"TEXT","tokenCount":12}]}}`,
	`{"usageMetadata":{"promptTokenCount":9223372036854775808}}`,
	`{"usageMetadata":null}`,
	`{"actions":{"stateDelta":{},"skipSummarization":true}}`,
	`{"actions":[]}`,
	`{"longRunningToolIds":["adk-1"]}`,
	`{"longRunningToolIds":[]}`,
	`{"content":{"parts":[{"functionCall":{"id":"adk-1","name":"f","args":{"a":1}}}]},"longRunningToolIds":["adk-1"]}`,
	`{"error":"boom"}`,
	`{"error":null,"content":{"parts":[{"text":"a"}]}}`,
	`{"error":{"message":"from a proxy"}}`,
	`{"errorCode":"MAX_TOKENS","errorMessage":"cut"}`,
	`{"invocationId":5}`,
	`{"deep":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	`{"content":{"parts":[{"text":"a"}]}} trailing`,
	`[]`, `null`, `"x"`, `{}`, ``, `{`,
	"{\"content\":{\"parts\":[{\"text\":\"bad \xff utf8\"}]},\"partial\":true}",
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
			_, se, err := decodePayload([]byte(tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(se, tt.want) {
				t.Fatalf("got %+v, want %+v", se, tt.want)
			}
		})
	}
}
