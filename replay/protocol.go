package replay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/agui"
)

// Protocol is the wire protocol a capture is asked for in: the route the
// request goes to, and so the encoder that answers. Every protocol runs the
// same capture pipeline; the golden suite replays every fixture in each.
type Protocol string

// The protocols the server speaks.
const (
	// CaptureV2 is the phone app's: /api/capture, /voice, /follow-up.
	CaptureV2 Protocol = "capture-v2"
	// AGUI is AG-UI 1.0 on /api/agui, as @ag-ui/client's HttpAgent asks,
	// with the agent's reasoning asked for, so that its goldens show all
	// an AG-UI client can get.
	AGUI Protocol = "agui"
	// V1 is the AG-UI-shaped stream of earlier app builds, on the routes
	// they call: /api/ag-ui, /api/ag-ui/follow-up, /api/voice-capture.
	V1 Protocol = "v1"
)

// Protocols lists every protocol, the phone's first.
var Protocols = []Protocol{CaptureV2, AGUI, V1}

// ParseProtocol returns the protocol named s; "" is CaptureV2.
func ParseProtocol(s string) (Protocol, error) {
	if s == "" {
		return CaptureV2, nil
	}
	if p := Protocol(s); slices.Contains(Protocols, p) {
		return p, nil
	}
	return "", fmt.Errorf("unknown protocol %q (want one of %s, %s, %s)", s, CaptureV2, AGUI, V1)
}

// GoldenSuffix is the suffix of the golden file of p's stream, after the
// fixture's name: the phone's keeps its original name.
func (p Protocol) GoldenSuffix() string {
	if p == CaptureV2 || p == "" {
		return ".sse.golden"
	}
	return "." + string(p) + ".golden"
}

// encodedRequest is a capture request on the wire.
type encodedRequest struct {
	route, contentType string
	body               []byte
	// ids is how many of the capture's ids the request names itself
	// (thread and run): the server makes that many fewer.
	ids int
}

// encodeRequest writes req as a client of its protocol sends it. Requests
// that name their thread and run name the ones the server would have made
// (ID(base+1), ID(base+2)), so that every protocol's capture gets the same
// ids and its goldens differ only in what the protocol says.
func encodeRequest(req Request) (encodedRequest, error) {
	threadID, runID := "thread-"+ID(req.IDBase+1), "run-"+ID(req.IDBase+2)
	switch req.Protocol {
	case CaptureV2, "":
		route, ctype, body, err := encodePhoneRequest(req)
		return encodedRequest{route, ctype, body, 0}, err
	case AGUI:
		body, err := aguiInput(req, threadID, runID)
		return encodedRequest{"/api/agui", "application/json", body, 2}, err
	case V1:
		switch req.Kind {
		case brainwire.KindText, "":
			body, err := json.Marshal(map[string]any{
				"messages":  []map[string]string{{"id": "msg-1", "role": "user", "content": req.Text}},
				"thread_id": threadID, "run_id": runID,
			})
			return encodedRequest{"/api/ag-ui", "application/json", body, 2}, err
		case brainwire.KindFollowUp, brainwire.KindVoice:
			// The same bodies as the phone's, on the routes of v1.
			route, ctype, body, err := encodePhoneRequest(req)
			route = map[string]string{"/api/capture/follow-up": "/api/ag-ui/follow-up", "/api/capture/voice": "/api/voice-capture"}[route]
			return encodedRequest{route, ctype, body, 0}, err
		}
	}
	return encodedRequest{}, fmt.Errorf("replay: no %q request for a %q capture", req.Protocol, req.Kind)
}

// aguiInput is the RunAgentInput HttpAgent sends for req: the capture as
// the last user message (voice as an inline audio part), and for a
// follow-up the state the misunderstood capture's run left.
func aguiInput(req Request, threadID, runID string) ([]byte, error) {
	var content any = req.Text
	state := map[string]any{}
	switch req.Kind {
	case brainwire.KindVoice:
		name, typ, audio := voiceUpload(req)
		content = []map[string]any{{
			"type":     "audio",
			"source":   map[string]string{"type": "data", "value": base64.StdEncoding.EncodeToString(audio), "mimeType": typ},
			"metadata": map[string]string{"filename": name},
		}}
	case brainwire.KindFollowUp:
		state[agui.StateKey] = map[string]any{
			"outcome":       brainwire.OutcomeMisunderstood,
			"inboxItemId":   req.InboxItemID,
			"followUpRound": max(req.FollowUpRound, 1) - 1,
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(map[string]any{
		"threadId":        threadID,
		"runId":           runID,
		"protocolVersion": "1.0",
		"state":           state,
		"messages":        []map[string]any{{"id": "msg-1", "role": "user", "content": content}},
		"tools":           []any{},
		"context":         []any{},
		"forwardedProps":  map[string]any{"reasoning": true},
	})
	return b.Bytes(), err
}
