package foundry_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/brainwire/brainwire/internal/recordings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/foundry/foundrytest"
	"github.com/brainwire/brainwire/foundry/foundrywire"
)

func recording(t testing.TB, name string) string {
	t.Helper()
	return string(recordings.Read(t, name))
}

// decodeAll reads every event of d until it returns an error.
func decodeAll(d *foundry.Decoder) ([]brainwire.AgentEvent, error) {
	var out []brainwire.AgentEvent
	for {
		ev, err := d.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

// readers feeds a recording whole, one byte at a time, and with CRLF line
// endings one byte at a time.
func readers(text string) map[string]func() io.Reader {
	crlf := strings.ReplaceAll(text, "\n", "\r\n")
	return map[string]func() io.Reader{
		"whole":         func() io.Reader { return strings.NewReader(text) },
		"one-byte":      func() io.Reader { return iotest.OneByteReader(strings.NewReader(text)) },
		"crlf/one-byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(crlf)) },
	}
}

func kinds(evs []brainwire.AgentEvent) string {
	var b strings.Builder
	for i, ev := range evs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(ev.Kind.String())
		if ev.Kind == brainwire.AgentRunStatus {
			b.WriteString(":" + string(ev.Status))
		}
	}
	return b.String()
}

func checkIDs(t *testing.T, evs []brainwire.AgentEvent, thread, run string) {
	t.Helper()
	for i, ev := range evs {
		if ev.ThreadID != thread || ev.RunID != run {
			t.Fatalf("event %d (%s): ids %q/%q, want %q/%q", i, ev.Kind, ev.ThreadID, ev.RunID, thread, run)
		}
	}
}

func TestDecodeMainStream(t *testing.T) {
	for name, mk := range readers(recording(t, "main_stream_response.txt")) {
		t.Run(name, func(t *testing.T) {
			d := foundry.NewDecoder(mk())
			evs, err := decodeAll(d)
			if err != io.EOF {
				t.Fatalf("ended with %v, want io.EOF", err)
			}
			want := "run_status:queued run_status:queued run_status:in_progress tool_call tool_call run_status:requires_action"
			if got := kinds(evs); got != want {
				t.Fatalf("events:\n got  %s\n want %s", got, want)
			}
			checkIDs(t, evs, "thread_01", "run_01")
			calls := []brainwire.ToolCall{evs[3].Tool, evs[4].Tool}
			wantCalls := []brainwire.ToolCall{
				{ID: "call_01", Name: "fetch_current_datetime", Arguments: json.RawMessage(`{}`), ThreadID: "thread_01", RunID: "run_01"},
				{ID: "call_02", Name: "fetch_weather", Arguments: json.RawMessage(`{"location": "New York"}`), ThreadID: "thread_01", RunID: "run_01"},
			}
			for i := range wantCalls {
				g, w := calls[i], wantCalls[i]
				if g.ID != w.ID || g.Name != w.Name || string(g.Arguments) != string(w.Arguments) || g.ThreadID != w.ThreadID || g.RunID != w.RunID {
					t.Errorf("call %d: got %+v (args %s), want %+v (args %s)", i, g, g.Arguments, w, w.Arguments)
				}
			}
			if d.Status() != brainwire.RunRequiresAction || d.ThreadID() != "thread_01" || d.RunID() != "run_01" {
				t.Errorf("decoder state %s %s %s", d.Status(), d.ThreadID(), d.RunID())
			}
		})
	}
}

func TestDecodeToolOutputsStream(t *testing.T) {
	for name, mk := range readers(recording(t, "fetch_current_datetime_and_weather_stream_response.txt")) {
		t.Run(name, func(t *testing.T) {
			d := foundry.NewDecoder(mk())
			d.SetRun("thread_01", "run_01")
			evs, err := decodeAll(d)
			if err != io.EOF {
				t.Fatalf("ended with %v, want io.EOF", err)
			}
			want := "run_status:queued run_status:in_progress tool_call run_status:requires_action"
			if got := kinds(evs); got != want {
				t.Fatalf("events:\n got  %s\n want %s", got, want)
			}
			checkIDs(t, evs, "thread_01", "run_01")
			call := evs[2].Tool
			var args map[string]string
			if err := json.Unmarshal(call.Arguments, &args); err != nil {
				t.Fatalf("arguments %s: %v", call.Arguments, err)
			}
			if call.ID != "call_03" || call.Name != "send_email" || args["recipient"] != "user@example.com" {
				t.Errorf("call %+v, args %v", call, args)
			}
		})
	}
}

// completedText is the text of the recording's thread.message.completed.
func completedText(t *testing.T, text string) string {
	t.Helper()
	_, rest, _ := strings.Cut(text, "event: thread.message.completed\ndata: ")
	line, _, _ := strings.Cut(rest, "\n")
	var m foundrywire.Message
	if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Content) == 0 {
		t.Fatalf("thread.message.completed %q: %v", line, err)
	}
	return m.Content[0].Text.Value
}

func TestDecodeSendEmailStream(t *testing.T) {
	text := recording(t, "send_email_stream_response.txt")
	refCompleted := completedText(t, text)
	for name, mk := range readers(text) {
		t.Run(name, func(t *testing.T) {
			d := foundry.NewDecoder(mk())
			evs, err := decodeAll(d)
			if err != io.EOF {
				t.Fatalf("ended with %v, want io.EOF", err)
			}
			checkIDs(t, evs, "thread_01", "run_01")
			var chunks []string
			for _, ev := range evs {
				if ev.Kind == brainwire.AgentTextChunk {
					chunks = append(chunks, ev.Text)
				}
			}
			if len(chunks) != 60 {
				t.Fatalf("%d text chunks, want 60", len(chunks))
			}
			if got := strings.Join(chunks, ""); got != refCompleted {
				t.Fatalf("message text:\n got  %q\n want %q", got, refCompleted)
			}
			if strings.Count(refCompleted, "\uFFFD") != 1 || !strings.Contains(refCompleted, "\n\n- Date and Time") {
				t.Fatalf("unexpected reference text %q", refCompleted)
			}
			n := len(evs)
			if n < 2 || evs[n-2].Kind != brainwire.AgentUsage || evs[n-1].Kind != brainwire.AgentRunStatus || evs[n-1].Status != brainwire.RunCompleted {
				t.Fatalf("last events: %s", kinds(evs[max(n-3, 0):]))
			}
			if u := evs[n-2].Usage; u != (brainwire.Usage{PromptTokens: 2217, CompletionTokens: 220, TotalTokens: 2437}) {
				t.Fatalf("usage %+v", u)
			}
			usages := 0
			for _, ev := range evs {
				if ev.Kind == brainwire.AgentUsage {
					usages++
				}
			}
			if usages != 1 {
				t.Fatalf("%d usage events, want 1 (steps carry usage too)", usages)
			}
			want := "run_status:queued run_status:in_progress"
			if got := kinds(evs[:2]); got != want {
				t.Fatalf("first events %s, want %s", got, want)
			}
		})
	}
}

func stream(evs ...foundrytest.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Wire())
	}
	return b.String()
}

func TestDecoder(t *testing.T) {
	r := foundrytest.NewRun("thread_1", "run_1")
	multi := `{"id":"msg_1","object":"thread.message.delta","delta":{"content":[` +
		`{"index":0,"type":"text","text":{"value":"a"}},{"index":1,"type":"image_file","image_file":{"file_id":"f"}},` +
		`{"index":2,"type":"text","text":{"value":""}},{"index":3,"type":"text","text":{"value":"b"}}]}}`
	tests := []struct {
		name   string
		input  string
		kinds  string
		err    error  // errors.Is target; nil means io.EOF
		errHas string // text the error must contain
		check  func(t *testing.T, evs []brainwire.AgentEvent)
	}{
		{
			name:  "thread.created sets the thread before the run",
			input: stream(r.ThreadCreated(), foundrytest.MessageDelta("msg_1", "hi"), r.Created(), r.Completed(foundrytest.Usage{Prompt: 1, Completion: 2, Total: 3}), foundrytest.Done()),
			kinds: "text_chunk run_status:queued usage run_status:completed",
			check: func(t *testing.T, evs []brainwire.AgentEvent) {
				if evs[0].ThreadID != "thread_1" || evs[0].RunID != "" || evs[1].RunID != "run_1" {
					t.Errorf("ids: %+v / %+v", evs[0], evs[1])
				}
			},
		},
		{
			name:  "failed run carries last_error",
			input: stream(r.InProgress(), r.Failed("server_error", "Sorry, something went wrong."), foundrytest.Done()),
			kinds: "run_status:in_progress run_status:failed",
			check: func(t *testing.T, evs []brainwire.AgentEvent) {
				if evs[1].ErrorCode != "server_error" || evs[1].ErrorMessage != "Sorry, something went wrong." {
					t.Errorf("failed event %+v", evs[1])
				}
			},
		},
		{
			name:  "several text parts, empty ones skipped",
			input: stream(foundrytest.Event{Name: "thread.message.delta", Data: multi}, foundrytest.MessageDelta("m", ""), r.Cancelled()),
			kinds: "text_chunk text_chunk run_status:cancelled",
			check: func(t *testing.T, evs []brainwire.AgentEvent) {
				if evs[0].Text != "a" || evs[1].Text != "b" {
					t.Errorf("texts %q %q", evs[0].Text, evs[1].Text)
				}
			},
		},
		{
			name: "steps, message objects and unknown events are skipped",
			input: stream(append(append(r.ToolCallStep("step_1", foundrytest.FileCaptureCall("call_1", "x", "Ideas", 0.5, "pending")),
				r.Message("msg_1")...),
				foundrytest.Event{Name: "thread.run.step.completed", Data: `not json`},
				foundrytest.Event{Name: "thread.something.new", Data: `{"usage":{"total_tokens":9}}`},
				r.Expired(), foundrytest.Done())...),
			kinds: "run_status:expired",
		},
		{
			name:  "error event with error.message",
			input: stream(r.InProgress(), foundrytest.ErrorEvent(`{"error":{"code":"rate_limit_exceeded","message":"Rate limit is exceeded."}}`)),
			kinds: "run_status:in_progress error",
			check: func(t *testing.T, evs []brainwire.AgentEvent) {
				if evs[1].ErrorCode != "rate_limit_exceeded" || evs[1].ErrorMessage != "Rate limit is exceeded." {
					t.Errorf("error event %+v", evs[1])
				}
			},
		},
		{
			name:  "error event with top-level message",
			input: stream(foundrytest.ErrorEvent(`{"message":"boom","code":500}`), foundrytest.Done()),
			kinds: "error",
			check: func(t *testing.T, evs []brainwire.AgentEvent) {
				if evs[0].ErrorMessage != "boom" || evs[0].ErrorCode != "500" {
					t.Errorf("error event %+v", evs[0])
				}
			},
		},
		{
			name:   "error event with text",
			input:  stream(r.InProgress(), foundrytest.ErrorEvent(`Internal server error at 10.0.0.7`), foundrytest.Done()),
			kinds:  "run_status:in_progress",
			errHas: "error event: Internal server error at 10.0.0.7",
		},
		{
			name:   "error event with JSON that says nothing",
			input:  stream(foundrytest.ErrorEvent(`{"upstream":"10.0.0.7"}`), foundrytest.Done()),
			errHas: `error event: {"upstream":"10.0.0.7"}`,
		},
		{
			name:  "events after done are not read",
			input: stream(r.Queued(), foundrytest.Done(), r.InProgress()),
			kinds: "run_status:queued",
		},
		{
			name:  "terminal run without done is a clean end",
			input: stream(r.Completed(foundrytest.Usage{})),
			kinds: "usage run_status:completed",
		},
		{
			name:  "requires_action without done is a clean end",
			input: stream(r.RequiresAction(foundrytest.ToolCall{ID: "c", Name: "f", Arguments: "{}"})),
			kinds: "tool_call run_status:requires_action",
		},
		{
			name:   "cut stream",
			input:  stream(r.Created(), r.InProgress(), foundrytest.MessageDelta("m", "x")),
			kinds:  "run_status:queued run_status:in_progress text_chunk",
			err:    io.ErrUnexpectedEOF,
			errHas: "in_progress",
		},
		{
			name:  "empty body",
			input: "",
			err:   io.ErrUnexpectedEOF,
		},
		{
			name:   "cut in the middle of a delta",
			input:  stream(r.InProgress()) + "event: thread.message.delta\ndata: {\"id\":\"m\",\"delta\":{\"content\":[{\"te",
			kinds:  "run_status:in_progress",
			errHas: "thread.message.delta",
		},
		{
			name:   "malformed run object",
			input:  stream(foundrytest.Event{Name: "thread.run.completed", Data: `{"id":"run_1",`}),
			errHas: "thread.run.completed",
		},
		{
			name:   "malformed delta",
			input:  stream(foundrytest.Event{Name: "thread.message.delta", Data: `{"delta":{"content":[{"text":{"value":"\q"}}]}}`}),
			errHas: "decoding thread.message.delta event",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := foundry.NewDecoder(strings.NewReader(tt.input))
			evs, err := decodeAll(d)
			switch {
			case tt.err == nil && tt.errHas == "":
				if err != io.EOF {
					t.Fatalf("ended with %v, want io.EOF", err)
				}
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Fatalf("ended with %v, want %v", err, tt.err)
			case err == io.EOF || !strings.Contains(err.Error(), tt.errHas):
				t.Fatalf("ended with %v, want an error containing %q", err, tt.errHas)
			}
			if got := kinds(evs); got != tt.kinds {
				t.Fatalf("events:\n got  %s\n want %s", got, tt.kinds)
			}
			if tt.check != nil {
				tt.check(t, evs)
			}
			if _, again := d.Next(); again != err {
				t.Fatalf("error not sticky: %v then %v", err, again)
			}
		})
	}
}
