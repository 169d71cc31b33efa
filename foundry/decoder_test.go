package foundry_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// TestDecodeRecordings decodes the recorded streams, whole, a byte at a
// time and with CRLF line ends: their run statuses, the tool calls with
// their arguments as sent, the run's usage once (its steps carry usage
// too), and message deltas that join into the completed message.
func TestDecodeRecordings(t *testing.T) {
	tests := []struct {
		file   string
		want   string // the events but text chunks
		chunks int
	}{
		{"main_stream_response.txt", `run_status:queued run_status:queued run_status:in_progress ` +
			`tool_call(call_01 fetch_current_datetime {}) tool_call(call_02 fetch_weather {"location":"New York"}) run_status:requires_action`, 0},
		{"fetch_current_datetime_and_weather_stream_response.txt", "run_status:queued run_status:in_progress " +
			`tool_call(call_03 send_email {"recipient":"user@example.com","subject":"Current New York Weather and DateTime Information",` +
			`"body":"Hello,\n\nHere are the details you requested:\n\n- Date and Time: 2025-01-03 14:57:24\n- Weather in New York: Sunny, 25` + "\uFFFD" + `C\n\nBest regards."}) ` +
			"run_status:requires_action", 0},
		{"send_email_stream_response.txt", "run_status:queued run_status:in_progress " +
			"usage({PromptTokens:2217 CompletionTokens:220 TotalTokens:2437 ReasoningTokens:0}) run_status:completed", 60},
	}
	for _, tt := range tests {
		text := recording(t, tt.file)
		for name, mk := range readers(text) {
			t.Run(tt.file+"/"+name, func(t *testing.T) {
				d := foundry.NewDecoder(mk())
				evs, err := decodeAll(d)
				if err != io.EOF {
					t.Fatalf("ended with %v, want io.EOF", err)
				}
				checkIDs(t, evs, "thread_01", "run_01")
				var got, chunks []string
				for _, ev := range evs {
					switch ev.Kind {
					case brainwire.AgentTextChunk:
						chunks = append(chunks, ev.Text)
					case brainwire.AgentToolCall:
						var args bytes.Buffer
						_ = json.Compact(&args, ev.Tool.Arguments)
						got = append(got, fmt.Sprintf("tool_call(%s %s %s)", ev.Tool.ID, ev.Tool.Name, args.String()))
					case brainwire.AgentUsage:
						got = append(got, fmt.Sprintf("usage(%+v)", ev.Usage))
					default:
						got = append(got, kinds([]brainwire.AgentEvent{ev}))
					}
				}
				if g := strings.Join(got, " "); g != tt.want {
					t.Fatalf("events:\n got  %s\n want %s", g, tt.want)
				}
				if d.Status() != evs[len(evs)-1].Status {
					t.Errorf("decoder status %s", d.Status())
				}
				if len(chunks) != tt.chunks {
					t.Fatalf("%d text chunks, want %d", len(chunks), tt.chunks)
				}
				if tt.chunks > 0 && strings.Join(chunks, "") != completedText(t, text) {
					t.Fatalf("message text %q, want the completed message's", strings.Join(chunks, ""))
				}
			})
		}
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
