package replay_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// adkReference are events as an ADK 2.x API server streams them (the
// documented /run_sse output of a Gemini agent with thinking on and a
// long-running tool; ids shortened), one of each kind.
var adkReference = map[string]string{
	"partial thought": `{"modelVersion":"gemini-2.5-flash","content":{"parts":[{"text":" with a due date, so it's a task.","thought":true}],"role":"model"},"partial":true,"invocationId":"e-0b7c","author":"classifier","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"nodeInfo":{"path":"classifier@1"},"id":"9d1e","timestamp":1784000001.31}`,
	"partial call":    `{"modelVersion":"gemini-2.5-flash","content":{"parts":[{"functionCall":{"id":"adk-3f0d","args":{"kind":"task"},"name":"file_capture"},"thoughtSignature":"CiQB0e2Kb"}],"role":"model"},"partial":true,"finishReason":"STOP","usageMetadata":{"candidatesTokenCount":41,"promptTokenCount":412,"thoughtsTokenCount":88,"totalTokenCount":541},"invocationId":"e-0b7c","author":"classifier","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"nodeInfo":{"path":"classifier@1"},"longRunningToolIds":["adk-3f0d"],"id":"9d1e","timestamp":1784000001.70}`,
	"aggregated call": `{"modelVersion":"gemini-2.5-flash","content":{"parts":[{"text":"This is a task.","thought":true},{"functionCall":{"id":"adk-3f0d","args":{"kind":"task"},"name":"file_capture"},"thoughtSignature":"CiQB0e2Kb"}],"role":"model"},"partial":false,"finishReason":"STOP","usageMetadata":{"candidatesTokenCount":41,"promptTokenCount":412,"thoughtsTokenCount":88,"totalTokenCount":541},"invocationId":"e-0b7c","author":"classifier","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"nodeInfo":{"path":"classifier@1"},"longRunningToolIds":["adk-3f0d"],"id":"9d1e","timestamp":1784000001.72}`,
	"partial text":    `{"modelVersion":"gemini-2.5-flash","content":{"parts":[{"text":"Filed \"Buy oat milk\""}],"role":"model"},"partial":true,"invocationId":"e-0b7c","author":"classifier","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"nodeInfo":{"path":"classifier@1"},"id":"41aa","timestamp":1784000009.02}`,
	"aggregated text": `{"modelVersion":"gemini-2.5-flash","content":{"parts":[{"text":"Filed \"Buy oat milk\" as a task."}],"role":"model"},"partial":false,"finishReason":"STOP","usageMetadata":{"candidatesTokenCount":9,"promptTokenCount":590,"totalTokenCount":599},"invocationId":"e-0b7c","author":"classifier","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"nodeInfo":{"path":"classifier@1"},"id":"41aa","timestamp":1784000009.21}`,
	"error frame":     `{"error": "ServerError: 503 UNAVAILABLE.", "error_details": {"error_type": "ServerError", "error_message": "503 UNAVAILABLE.", "timestamp": 1784000002.4}}`,
}

// adkKind names an event by what it is, and returns its members, leaving
// out those present only on some events of a kind (usage and the finish
// reason ride on whichever chunk the model put them; a failed model call
// adds its error).
func adkKind(data []byte) (kind string, keys []string) {
	var ev map[string]json.RawMessage
	if json.Unmarshal(data, &ev) != nil {
		return "not JSON", nil
	}
	if _, ok := ev["error"]; ok {
		kind = "error frame"
	} else {
		var partial bool
		json.Unmarshal(ev["partial"], &partial)
		kind = "aggregated"
		if partial {
			kind = "partial"
		}
		var content struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		}
		json.Unmarshal(ev["content"], &content)
		switch {
		case slices.ContainsFunc(content.Parts, func(p map[string]json.RawMessage) bool { return p["functionCall"] != nil }):
			kind += " call"
		case kind == "partial" && len(content.Parts) == 1 && string(content.Parts[0]["thought"]) == "true":
			kind += " thought"
		default:
			kind += " text"
		}
	}
	for k := range ev {
		switch k {
		case "usageMetadata", "finishReason", "errorCode", "errorMessage":
		default:
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return kind, keys
}

// TestADKCorpusHasTheServerShape compares the ADK corpus, recorded
// against the simulator's ADK face, with the server's documented output:
// the same members per kind of event, and the stream rules a client
// relies on. The fixtures recorded from a real API server (adk-server-*,
// the JavaScript one) are that server's own output, checked against it
// live by TestADKServer.
func TestADKCorpusHasTheServerShape(t *testing.T) {
	want := map[string][]string{}
	for name, data := range adkReference {
		kind, keys := adkKind([]byte(data))
		if kind != name {
			t.Fatalf("reference %q reads as %q", name, kind)
		}
		want[kind] = keys
	}
	fxs := corpus(t, "adk-*.json")
	if len(fxs) < 6 {
		t.Fatalf("%d ADK fixtures, want at least 6", len(fxs))
	}
	compared := map[string]bool{}
	for _, fx := range fxs {
		if fx.Upstream != "simulator" {
			continue
		}
		var handedOver []string // the ids the last stream handed over
		for i, ex := range fx.Exchanges {
			if !strings.HasSuffix(ex.Request.Path, "/run_sse") {
				continue
			}
			var body struct {
				NewMessage struct {
					Parts []struct {
						Text             *string `json:"text"`
						FunctionResponse *struct {
							ID string `json:"id"`
						} `json:"functionResponse"`
					} `json:"parts"`
				} `json:"newMessage"`
			}
			json.Unmarshal(ex.Request.BodyBytes(), &body)
			var answered []string
			for _, p := range body.NewMessage.Parts {
				if p.FunctionResponse != nil {
					answered = append(answered, p.FunctionResponse.ID)
				}
			}
			if !slices.Equal(answered, handedOver) {
				t.Errorf("%s: exchange %d answers %v; the stream before handed over %v", fx.Name, i+1, answered, handedOver)
			}
			if len(answered) > 0 && len(answered) != len(body.NewMessage.Parts) {
				t.Errorf("%s: exchange %d mixes function responses with text", fx.Name, i+1)
			}
			rs := ex.Response
			if rs == nil || !rs.IsStream() || len(rs.Events) == 0 {
				continue
			}
			handedOver = nil
			var last map[string]json.RawMessage
			for j, ev := range rs.Events {
				if ev.Name != "" {
					t.Errorf("%s: exchange %d event %d is named %q: the server names none", fx.Name, i+1, j+1, ev.Name)
				}
				kind, keys := adkKind(ev.Payload())
				ref, ok := want[kind]
				if !ok {
					t.Errorf("%s: exchange %d event %d: no %s in the reference", fx.Name, i+1, j+1, kind)
					continue
				}
				compared[kind] = true
				if !slices.Equal(keys, ref) {
					t.Errorf("%s: exchange %d event %d (%s) has members %v; the server sends %v", fx.Name, i+1, j+1, kind, keys, ref)
				}
				last = nil
				json.Unmarshal(ev.Payload(), &last)
			}
			whole := rs.Error == "" && rs.Partial == "" && !rs.Closed
			if _, isErr := last["error"]; whole && !isErr && string(last["partial"]) != "false" {
				t.Errorf("%s: exchange %d: a whole stream ends with a partial event", fx.Name, i+1)
			}
			json.Unmarshal(last["longRunningToolIds"], &handedOver)
		}
	}
	if len(compared) != len(adkReference) {
		t.Errorf("the corpus has %d of the %d kinds of event: %v", len(compared), len(adkReference), compared)
	}
}
