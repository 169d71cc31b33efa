package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/protocol/agui/aguitest"
)

// protocol is one of the server's ways in for a capture: capture-v2, v1
// (what earlier app builds call) and AG-UI.
type protocol struct {
	name, path string
	text       func(text string) string // a text capture's body
	voicePath  string                   // "": audio comes inline, in the body
	// followUp answers the question of the misunderstood capture whose
	// stream was first, as the protocol's clients do.
	followUp func(t *testing.T, first, text string) (path, body string)
}

var protocols = []protocol{
	{
		name: "capture v2", path: "/api/capture", voicePath: "/api/capture/voice",
		text: func(text string) string { return mustJSON(map[string]string{"text": text}) },
		followUp: func(t *testing.T, first, text string) (string, string) {
			return "/api/capture/follow-up", followUpBody((protocol{}).ending(t, first).item, text, 1)
		},
	},
	{
		name: "v1", path: "/api/ag-ui", voicePath: "/api/voice-capture", text: legacyBody,
		followUp: func(t *testing.T, first, text string) (string, string) {
			// Earlier builds may leave out the round: it is the first.
			return "/api/ag-ui/follow-up", mustJSON(map[string]string{"inbox_item_id": (protocol{}).ending(t, first).item, "follow_up_text": text})
		},
	},
	{
		name: "AG-UI", path: "/api/agui",
		text: func(text string) string { return runInput(text, `{}`, `{}`) },
		followUp: func(t *testing.T, first, text string) (string, string) {
			// HttpAgent sends back the state the last run left.
			var state string
			for _, ev := range (protocol{}).events(t, first) {
				if ev["type"] == "STATE_DELTA" {
					state = `{"capture":` + mustJSON(ev["delta"].([]any)[0].(map[string]any)["value"]) + `}`
				}
			}
			return "/api/agui", runInput(text, state, `{}`)
		},
	},
}

// events parses a capture's stream in p; an AG-UI stream must keep
// AG-UI's rules.
func (p protocol) events(t *testing.T, stream string) []map[string]any {
	t.Helper()
	frames, err := aguitest.Frames(stream)
	if err != nil {
		t.Fatal(err)
	}
	if p.name == "AG-UI" {
		if err := aguitest.Verify(frames); err != nil {
			t.Fatalf("not a valid AG-UI stream: %v\n%s", err, stream)
		}
	}
	var evs []map[string]any
	for _, f := range frames {
		var ev map[string]any
		_ = json.Unmarshal([]byte(f), &ev)
		evs = append(evs, ev)
	}
	return evs
}

// ending is how a stream says its capture ended, in any protocol.
type ending struct {
	outcome                     string // classified, low_confidence, misunderstood, unresolved or error
	item, bucket, message, code string
	// types lists the events, a CUSTOM event with its name and an
	// outcome's value with its outcome.
	types []string
}

// outcomeEvents are the events or CUSTOM names of capture-v2 and v1
// outcomes, by outcome.
var outcomeEvents = map[string]string{"CLASSIFIED": "classified", "LOW_CONFIDENCE": "low_confidence", "HITL_REQUIRED": "low_confidence",
	"MISUNDERSTOOD": "misunderstood", "UNRESOLVED": "unresolved"}

func (p protocol) ending(t *testing.T, stream string) ending {
	t.Helper()
	var e ending
	for _, ev := range p.events(t, stream) {
		typ, _ := ev["type"].(string)
		name, _ := ev["name"].(string)
		value, _ := ev["value"].(map[string]any)
		desc := strings.TrimSpace(typ + " " + name)
		if o, ok := value["outcome"].(string); ok {
			desc += " " + o
		}
		e.types = append(e.types, desc)
		switch {
		case typ == "ERROR" || typ == "RUN_ERROR":
			e.outcome = "error"
			e.message, _ = ev["message"].(string)
			e.code, _ = ev["code"].(string)
		case outcomeEvents[typ] != "" || outcomeEvents[name] != "":
			e.outcome = outcomeEvents[typ] + outcomeEvents[name]
		case name == "brainwire.outcome":
			e.outcome, _ = value["outcome"].(string)
		default:
			continue
		}
		e.item, _ = value["inboxItemId"].(string)
		e.bucket, _ = value["bucket"].(string)
	}
	return e
}

func (e ending) String() string {
	return fmt.Sprintf("%s item %q bucket %q %q (%s) after %v", e.outcome, e.item, e.bucket, e.message, e.code, e.types)
}
