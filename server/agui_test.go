package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/brainwire/brainwire"
	ft "github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/protocol/agui/aguitest"
)

// runInput is a RunAgentInput as HttpAgent sends it, with one user message.
func runInput(content any, state, props string) string {
	c, _ := json.Marshal(content)
	return fmt.Sprintf(`{"threadId":"t-agui","runId":"r-agui","protocolVersion":"1.0","state":%s,`+
		`"messages":[{"id":"u1","role":"user","content":%s}],"tools":[],"context":[],"forwardedProps":%s}`, state, c, props)
}

// aguiEvent is one decoded AG-UI event.
type aguiEvent map[string]any

func (e aguiEvent) typ() string { s, _ := e["type"].(string); return s }

// agui posts a RunAgentInput and returns the events, after checking the
// stream's headers, framing and AG-UI's rules.
func (h *harness) agui(body string) []aguiEvent {
	h.t.Helper()
	resp := h.post("/api/agui", "application/json", body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		h.t.Fatalf("status %d (%s): %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	frames, err := aguitest.Frames(string(b))
	if err != nil {
		h.t.Fatal(err)
	}
	if err := aguitest.Verify(frames); err != nil {
		h.t.Fatalf("not a valid AG-UI stream: %v\n%s", err, strings.Join(frames, "\n"))
	}
	var evs []aguiEvent
	for _, f := range frames {
		var ev aguiEvent
		_ = json.Unmarshal([]byte(f), &ev)
		evs = append(evs, ev)
	}
	return evs
}

func types(evs []aguiEvent) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.typ())
	}
	return strings.Join(out, " ")
}

// The agent's reasoning reaches an AG-UI client only when it asks for it
// (forwardedProps.reasoning), every chunk in order; state events come only
// for a state that is an object; the run keeps the client's ids. The rest
// of the stream is held by the goldens' AG-UI replays.
func TestAGUIReasoningOnlyWhenAsked(t *testing.T) {
	for _, c := range []struct {
		name, content, state, props string
	}{
		{"not asked", `"Call Sarah"`, `{}`, `{}`},
		{"asked, with a null state", `[{"type":"text","text":"Call Sarah"}]`, `null`, `{"reasoning":true}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			call := classify(ft.FileCaptureCall("call_1", "Call Sarah", "People", 0.9, "classified"), 5)
			h := newHarness(t, call.Script())
			var content any
			_ = json.Unmarshal([]byte(c.content), &content)
			evs := h.agui(runInput(content, c.state, c.props))
			var chunks []string
			states := 0
			for _, e := range evs {
				switch e.typ() {
				case "REASONING_MESSAGE_CONTENT":
					chunks = append(chunks, e["delta"].(string))
				case "STATE_DELTA":
					states++
				}
			}
			want := call.Reasoning
			if c.props == `{}` {
				want = nil
			}
			if !slices.Equal(chunks, want) || (states == 0) != (c.state == `null`) {
				t.Fatalf("reasoning chunks %q, want %q; %d state events:\n%s", chunks, want, states, types(evs))
			}
			// The client's ids come back, not ones the server made.
			if first, last := evs[0], evs[len(evs)-1]; first["threadId"] != "t-agui" || first["runId"] != "r-agui" ||
				last["threadId"] != "t-agui" || last["runId"] != "r-agui" {
				t.Fatalf("run ids %v ... %v", first, last)
			}
			if items := h.inbox(testUser); len(items) != 1 || items[0].Status != brainwire.StatusClassified {
				t.Fatalf("inbox %+v", items)
			}
		})
	}
}

// AG-UI clients send the whole conversation with every run: a long thread
// is taken, its last message captured, even without voice configured.
func TestAGUITakesTheConversation(t *testing.T) {
	c := classify(ft.FileCaptureCall("call_1", "Call Sarah", "People", 0.9, "classified"), 1)
	h := newHarness(t, c.Script(), withBlobs(nil))
	var msgs []map[string]any
	for i := range 200 {
		msgs = append(msgs, map[string]any{"id": fmt.Sprint("u", i), "role": "user", "content": strings.Repeat("earlier capture ", 60)},
			map[string]any{"id": fmt.Sprint("a", i), "role": "assistant", "content": "Filed to Ideas."})
	}
	msgs = append(msgs, map[string]any{"id": "last", "role": "user", "content": "Call Sarah"})
	body, _ := json.Marshal(map[string]any{"threadId": "t", "runId": "r", "messages": msgs, "state": map[string]any{}})
	if len(body) < 200<<10 {
		t.Fatalf("conversation of only %d bytes", len(body))
	}
	evs := h.agui(string(body))
	if last := evs[len(evs)-1]; last.typ() != "RUN_FINISHED" || h.inbox(testUser)[0].RawText != "Call Sarah" {
		t.Fatalf("ended with %v; inbox %+v", last, h.inbox(testUser))
	}
	if r := h.do("POST", "/api/agui", testKey, "bearer", "application/json", runInput([]map[string]any{{"type": "audio",
		"source": map[string]string{"type": "data", "value": "AAAA", "mimeType": "audio/wav"}}}, `{}`, `{}`)); r.status != 503 {
		t.Fatalf("audio without voice configured: %d %s", r.status, r.detail)
	}
}

// spoolWatcher transcribes as stubTranscriber does, noting, while the
// capture runs, the entries of dir and the files in it the process holds
// open (Linux's /proc/self/fd names a removed one "<path> (deleted)").
type spoolWatcher struct {
	dir  string
	seen chan spoolSeen
}

type spoolSeen struct{ entries, open int }

func (s spoolWatcher) Transcribe(_ context.Context, audio io.Reader, _, _ string) (string, error) {
	_, _ = io.Copy(io.Discard, audio)
	entries, _ := os.ReadDir(s.dir)
	seen := spoolSeen{entries: len(entries)}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, s.dir+string(os.PathSeparator)) {
			seen.open++
		}
	}
	s.seen <- seen
	return "Call mom about her birthday on Sunday.", nil
}

// Inline audio reaches the blob store through a file in the temporary
// directory, not memory. The file is removed from the directory as soon as
// it is made, so that a server killed during the capture leaves nothing
// behind, and it is gone when the request is.
func TestAGUIInlineAudioPassesThroughAFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the open files from /proc/self/fd")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	seen := make(chan spoolSeen, 1)
	h := newHarness(t, nil, withSimulator(t), withTranscriber(spoolWatcher{tmp, seen}))
	wav := append([]byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"), make([]byte, 64<<10)...)
	evs := h.agui(runInput([]map[string]any{{"type": "audio", "source": map[string]string{
		"type": "data", "value": base64.StdEncoding.EncodeToString(wav), "mimeType": "audio/wav"}}}, `{}`, `{}`))
	if last := evs[len(evs)-1]; last.typ() != "RUN_FINISHED" {
		t.Fatalf("events %s", types(evs))
	}
	if s := <-seen; s.open != 1 || s.entries != 0 {
		t.Errorf("during the capture: %d files of the temporary directory open, %d entries in it; want the audio's open and none a crash would leave", s.open, s.entries)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("left in the temporary directory: %v", entries)
	}
	// A text capture makes no file.
	h.agui(runInput("Call mom", `{}`, `{}`))
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("a text capture left %v", entries)
	}
}
