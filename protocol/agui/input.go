package agui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/brainwire/brainwire"
)

// Input is what a RunAgentInput asks of brainwire: one capture, from the
// last user message of the conversation the client sends.
type Input struct {
	// ThreadID and RunID are the client's ids, echoed in RUN_STARTED and
	// RUN_FINISHED.
	ThreadID string
	RunID    string
	// Text is the last user message's text (its text parts, one per
	// line), trimmed; empty for a voice capture.
	Text string
	// Audio is the last user message's audio, sent inline.
	Audio *Audio
	// FollowUp is set when the run's state holds the misunderstood capture
	// a previous run reported: the message answers its question.
	FollowUp *FollowUp
	Options  Options
}

// Audio is an audio content part's bytes.
type Audio struct {
	// Data reads the decoded audio, wherever ReadInput spooled it.
	Data     *io.SectionReader
	MimeType string
	// Filename is metadata.filename, when the client gave one.
	Filename string
}

// FollowUp names the misunderstood inbox item a run answers, and which
// follow-up round the answer is.
type FollowUp struct {
	InboxItemID string
	Round       int
}

// runAgentInput is the part of RunAgentInput (core@1.0.0) brainwire reads.
// Its objects are open: unknown keys are allowed, as the schema allows
// them. tools and context are the client's own and need no reading: the
// agent's tools are the server's.
type runAgentInput struct {
	ThreadID       *string         `json:"threadId"`
	RunID          *string         `json:"runId"`
	Messages       []message       `json:"messages"`
	State          json.RawMessage `json:"state"`
	ForwardedProps json.RawMessage `json:"forwardedProps"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source *struct {
		Type     string `json:"type"`
		Value    string `json:"value"`
		MimeType string `json:"mimeType"`
	} `json:"source"`
	Metadata json.RawMessage `json:"metadata"`
}

// ParseInput reads a RunAgentInput held in memory; its audio is decoded
// into memory too. Every error is a *brainwire.Error with code EInvalid and
// a message for the client.
func ParseInput(body []byte) (Input, error) {
	return ReadInput(bytes.NewReader(body), &MemSpool{}, Limits{})
}

// spoolTable is where the audio values of an input went.
type spoolTable struct {
	spool  Spool
	values []spooled
}

// parse reads a RunAgentInput whose audio values were spooled.
func parse(body []byte, sp spoolTable) (Input, error) {
	var in runAgentInput
	if err := json.Unmarshal(body, &in); err != nil {
		return Input{}, invalid("malformed RunAgentInput: %v", err)
	}
	switch {
	case in.ThreadID == nil:
		return Input{}, invalid("threadId is required")
	case in.RunID == nil:
		return Input{}, invalid("runId is required")
	case in.Messages == nil:
		return Input{}, invalid("messages is required")
	}
	out := Input{ThreadID: *in.ThreadID, RunID: *in.RunID}
	last := -1
	for i, m := range in.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return Input{}, invalid("messages has no user message to capture")
	}
	if err := out.readContent(in.Messages[last].Content, sp); err != nil {
		return Input{}, err
	}
	out.Options.Reasoning = reasoningAsked(in.ForwardedProps)
	state := bytes.TrimSpace(in.State)
	out.Options.State = len(state) > 0 && state[0] == '{'
	if out.Options.State {
		fu, err := followUpOf(state)
		if err != nil {
			return Input{}, err
		}
		out.FollowUp = fu
	}
	if out.FollowUp != nil && out.Audio != nil {
		return Input{}, invalid("the answer to a clarifying question must be text")
	}
	return out, nil
}

// readContent takes the text or the audio of the message to capture.
func (in *Input) readContent(raw json.RawMessage, sp spoolTable) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return invalid("malformed user message content: %v", err)
		}
		in.Text = strings.TrimSpace(s)
	} else {
		var parts []contentPart
		if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &parts) != nil {
			return invalid("user message content must be a string or an array of content parts")
		}
		var texts []string
		for _, p := range parts {
			switch p.Type {
			case "text":
				texts = append(texts, p.Text)
			case "audio":
				if in.Audio != nil {
					return invalid("a capture takes one audio part")
				}
				a, err := readAudio(p, sp)
				if err != nil {
					return err
				}
				in.Audio = a
			}
			// Images, video and documents are not captures: skipped.
		}
		in.Text = strings.TrimSpace(strings.Join(texts, "\n"))
	}
	switch {
	case in.Audio != nil && in.Text != "":
		return invalid("a capture is text or audio, not both")
	case in.Audio == nil && in.Text == "":
		return invalid("the last user message has no text to capture")
	}
	return nil
}

func readAudio(p contentPart, sp spoolTable) (*Audio, error) {
	if p.Source == nil {
		return nil, invalid("audio part without a source")
	}
	if p.Source.Type != "data" {
		// Fetching a client's URL from the server is not something a
		// capture needs, and not something to do on anyone's behalf.
		return nil, invalid("audio must be sent inline (source type \"data\"), not %q", p.Source.Type)
	}
	data, err := spooledAudio(p.Source.Value, sp)
	if err != nil {
		return nil, err
	}
	if data.Size() == 0 {
		return nil, invalid("audio data is empty")
	}
	a := &Audio{Data: data, MimeType: p.Source.MimeType}
	var meta struct {
		Filename string `json:"filename"`
	}
	if len(p.Metadata) > 0 && json.Unmarshal(p.Metadata, &meta) == nil {
		a.Filename = meta.Filename
	}
	return a, nil
}

// spooledAudio is the audio a source's value names in the spool. A value
// that names none was not spooled (a key spelt in a way the spooler did
// not take for "value"): it is decoded here.
func spooledAudio(value string, sp spoolTable) (*io.SectionReader, error) {
	if i, err := strconv.Atoi(strings.TrimPrefix(value, "#")); err == nil && strings.HasPrefix(value, "#") && i >= 0 && i < len(sp.values) {
		v := sp.values[i]
		if v.err != nil {
			return nil, v.err
		}
		return io.NewSectionReader(sp.spool, v.off, v.n), nil
	}
	data, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		data, err = base64.RawStdEncoding.DecodeString(value)
	}
	if err != nil {
		return nil, invalid("audio data is not base64")
	}
	return io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), nil
}

// reasoningAsked reports whether forwardedProps asks for the agent's
// reasoning: {"reasoning": true}. forwardedProps is the application's to
// define and may be any JSON value; anything else leaves reasoning off.
func reasoningAsked(props json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(props, &m) != nil {
		return false
	}
	return string(bytes.TrimSpace(m["reasoning"])) == "true"
}

// followUpOf reads the capture a previous run put in the state. Only a
// misunderstood one makes the run a follow-up; the state is the client's,
// so what it says is checked against the store by the server.
func followUpOf(state json.RawMessage) (*FollowUp, error) {
	var s map[string]json.RawMessage
	if json.Unmarshal(state, &s) != nil {
		return nil, nil
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(s[StateKey], &c) != nil || c == nil {
		return nil, nil
	}
	var o string
	if json.Unmarshal(c["outcome"], &o) != nil || o != string(brainwire.OutcomeMisunderstood) {
		return nil, nil
	}
	var fu struct {
		InboxItemID string `json:"inboxItemId"`
		Round       uint16 `json:"followUpRound"`
	}
	if err := json.Unmarshal(s[StateKey], &fu); err != nil || fu.InboxItemID == "" {
		return nil, invalid("state.%s of a misunderstood capture needs its inboxItemId and followUpRound", StateKey)
	}
	return &FollowUp{InboxItemID: fu.InboxItemID, Round: int(fu.Round) + 1}, nil
}

func invalid(format string, args ...any) error {
	return brainwire.Errorf(brainwire.EInvalid, format, args...)
}
