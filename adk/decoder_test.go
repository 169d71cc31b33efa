package adk_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/adk/adktest"
)

// body joins frames as the API server writes them.
func body(frames ...[]adktest.Frame) string {
	var b strings.Builder
	for _, fs := range frames {
		for _, f := range fs {
			b.WriteString(f.Wire())
		}
	}
	return b.String()
}

func frames(fs ...adktest.Frame) []adktest.Frame { return fs }

// decodeAll reads a body to its end and renders each event on one line.
func decodeAll(t *testing.T, r io.Reader) ([]string, error) {
	t.Helper()
	d := adk.NewDecoder(r)
	d.SetSession("s-1", "")
	d.ExpectClientTools("file_capture")
	var out []string
	for {
		ev, err := d.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if ev.ThreadID != "s-1" {
			t.Errorf("%s: thread %q, want the session", ev.Kind, ev.ThreadID)
		}
		out = append(out, render(ev))
	}
}

func render(ev brainwire.AgentEvent) string {
	s := ev.Kind.String()
	if ev.RunID != "" {
		s += " [" + ev.RunID + "]"
	}
	switch ev.Kind {
	case brainwire.AgentTextChunk:
		s += fmt.Sprintf(" %q", ev.Text)
	case brainwire.AgentToolCall:
		s += fmt.Sprintf(" %s %s %s", ev.Tool.ID, ev.Tool.Name, ev.Tool.Arguments)
	case brainwire.AgentUsage:
		s += fmt.Sprintf(" %d/%d/%d", ev.Usage.PromptTokens, ev.Usage.CompletionTokens, ev.Usage.TotalTokens)
	case brainwire.AgentRunStatus:
		s += " " + string(ev.Status)
		if ev.ErrorCode != "" {
			s += " " + ev.ErrorCode + ": " + ev.ErrorMessage
		}
	case brainwire.AgentError:
		s += " " + ev.ErrorCode + ": " + ev.ErrorMessage
	}
	return s
}

var (
	classify = adktest.Turn{InvocationID: "e-1", EventID: "ev-1",
		Thoughts: []string{"**Classifying**\n\n", "It names Mom: ", "People 🎂."},
		Texts:    []string{"Filing it."},
		Calls:    []adktest.FunctionCall{{ID: "adk-1", Name: "file_capture", Args: `{"text":"Call mom","bucket":"People"}`}},
		Usage:    &adktest.Usage{Prompt: 400, Candidates: 40, Thoughts: 80, Total: 520}}
	confirm = adktest.Turn{InvocationID: "e-1", EventID: "ev-2", Texts: []string{"Filed to", " People."},
		Usage: &adktest.Usage{Prompt: 600, Candidates: 10, Total: 610}}
)

func TestDecoder(t *testing.T) {
	withoutPartials := adktest.Turn{InvocationID: "e-3", EventID: "ev-3", Thoughts: []string{"all at", " once"}, Texts: []string{"Done."}}
	twoCalls := adktest.Turn{InvocationID: "e-4", EventID: "ev-4", Calls: []adktest.FunctionCall{
		{ID: "adk-a", Name: "file_capture", Args: `{"bucket":"People"}`}, {ID: "adk-b", Name: "file_capture"}}}
	ownTool := adktest.Turn{InvocationID: "e-5", EventID: "ev-5", Calls: []adktest.FunctionCall{{ID: "adk-w", Name: "weather", Args: `{"city":"Oslo"}`}}, AgentRuns: true}
	afterOwnTool := adktest.Turn{InvocationID: "e-5", EventID: "ev-6", Texts: []string{"Sunny."}}
	tests := []struct {
		name    string
		body    string
		want    []string
		wantErr string
	}{
		{
			name: "thoughts, text and a handed-over call: requires action",
			body: body(classify.Frames()),
			want: []string{
				"run_status in_progress",
				`text_chunk [e-1] "**Classifying**\n\n"`, `text_chunk [e-1] "It names Mom: "`, `text_chunk [e-1] "People 🎂."`,
				`text_chunk [e-1] "Filing it."`,
				"usage [e-1] 400/120/520",
				`tool_call [e-1] adk-1 file_capture {"text":"Call mom","bucket":"People"}`,
				"run_status [e-1] requires_action",
			},
		},
		{
			name: "the resumed run's answer: completed, its text counted once",
			body: body(confirm.Frames()),
			want: []string{"run_status in_progress", `text_chunk [e-1] "Filed to"`, `text_chunk [e-1] " People."`,
				"usage [e-1] 600/10/610", "run_status [e-1] completed"},
		},
		{
			name: "no streaming: the aggregated events carry all the text",
			body: body(frames(withoutPartials.Aggregated())),
			want: []string{"run_status in_progress", `text_chunk [e-3] "all at once"`, `text_chunk [e-3] "Done."`, "run_status [e-3] completed"},
		},
		{
			name: "an aggregated event with more than was streamed: only the rest is new",
			body: body(withoutPartials.Partials()[:1], frames(withoutPartials.Aggregated())),
			want: []string{"run_status in_progress", `text_chunk [e-3] "all at"`, `text_chunk [e-3] " once"`, `text_chunk [e-3] "Done."`, "run_status [e-3] completed"},
		},
		{
			name: "parallel calls, arguments absent",
			body: body(twoCalls.Frames()),
			want: []string{"run_status in_progress",
				`tool_call [e-4] adk-a file_capture {"bucket":"People"}`, "tool_call [e-4] adk-b file_capture {}",
				"run_status [e-4] requires_action"},
		},
		{
			name: "a tool the agent runs itself, its response, then the answer",
			body: body(ownTool.Frames(), frames(adktest.FunctionResponseEvent("e-5", "ev-r", "adk-w", "weather", map[string]string{"sky": "clear"})), afterOwnTool.Frames()),
			want: []string{"run_status in_progress", `text_chunk [e-5] "Sunny."`, "run_status [e-5] completed"},
		},
		{
			name: "a failed model call",
			body: body(adktest.Turn{InvocationID: "e-6", EventID: "ev-7", Thoughts: []string{"Hmm"}, ErrorCode: "MAX_TOKENS", ErrorMessage: "The output was cut."}.Frames()),
			want: []string{"run_status in_progress", `text_chunk [e-6] "Hmm"`, "run_status [e-6] failed MAX_TOKENS: The output was cut."},
		},
		{
			name: "an error frame ends the stream",
			body: body(classify.Partials()[:2], frames(adktest.ErrorFrame("ServerError", "503 UNAVAILABLE."))),
			want: []string{"run_status in_progress", `text_chunk [e-1] "**Classifying**\n\n"`, `text_chunk [e-1] "It names Mom: "`,
				"error [e-1] ServerError: 503 UNAVAILABLE."},
		},
		{
			name: "an old server's unescaped error frame",
			body: "data: " + `{"error": "400 INVALID_ARGUMENT. {'message': "Request contains an invalid argument."}"}` + "\n\n",
			want: []string{"run_status in_progress", `error : 400 INVALID_ARGUMENT. {'message': "Request contains an invalid argument."}`},
		},
		{
			name:    "the body ends after a partial event: cut",
			body:    body(classify.Partials()),
			want:    []string{"run_status in_progress", `text_chunk [e-1] "**Classifying**\n\n"`, `text_chunk [e-1] "It names Mom: "`, `text_chunk [e-1] "People 🎂."`, `text_chunk [e-1] "Filing it."`},
			wantErr: "ended before the agent's turn did: unexpected EOF",
		},
		{
			name:    "an empty body",
			body:    "",
			want:    []string{"run_status in_progress"},
			wantErr: "unexpected EOF",
		},
		{
			name:    "a payload that is not an event",
			body:    "data: <html>Bad Gateway</html>\n\n",
			want:    []string{"run_status in_progress"},
			wantErr: "decoding event <html>Bad Gateway</html>",
		},
		{
			name:    "the agent runs file_capture itself",
			body:    body(adktest.Turn{InvocationID: "e-7", EventID: "ev-8", Calls: []adktest.FunctionCall{{ID: "adk-x", Name: "file_capture"}}, AgentRuns: true}.Frames()),
			want:    []string{"run_status in_progress"},
			wantErr: "as a tool it runs itself",
		},
		{
			// ADK before 1.22: only text streams; when the call comes,
			// the text is closed by a non-partial event carrying the
			// call's usage, then the call's event carries it again.
			name: "an old server's text and call events: one model call, its usage once",
			body: "data: " + legacyText(true, `"**Filing**"`, "") + "\n\n" +
				"data: " + legacyText(false, `"**Filing**"`, `,"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"totalTokenCount":13}`) + "\n\n" +
				"data: " + `{"content":{"parts":[{"functionCall":{"id":"adk-l","args":{},"name":"file_capture"}}],"role":"model"},"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"totalTokenCount":13},"invocationId":"e-8","author":"classifier","longRunningToolIds":["adk-l"],"id":"ev-c"}` + "\n\n",
			want: []string{"run_status in_progress", `text_chunk [e-8] "**Filing**"`, "usage [e-8] 10/3/13",
				"tool_call [e-8] adk-l file_capture {}", "run_status [e-8] requires_action"},
		},
		{
			name: "comments, keep-alive frames and event names are ignored",
			body: ": ping\n\ndata:\n\nevent: message\n" + body(confirm.Frames()),
			want: []string{"run_status in_progress", `text_chunk [e-1] "Filed to"`, `text_chunk [e-1] " People."`,
				"usage [e-1] 600/10/610", "run_status [e-1] completed"},
		},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"crlf": func(s string) io.Reader {
			return iotest.HalfReader(strings.NewReader(strings.ReplaceAll(s, "\n", "\r\n")))
		},
	}
	for _, tt := range tests {
		for rname, reader := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got, err := decodeAll(t, reader(tt.body))
				if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if err != nil {
					var bw *brainwire.Error
					if !errors.As(err, &bw) || bw.Code != brainwire.EUpstream {
						t.Errorf("err %v is not an upstream error", err)
					}
				}
				if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
					t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
				}
			})
		}
	}
}

// legacyText is a text event of an ADK server before 1.22.
func legacyText(partial bool, text, extra string) string {
	return fmt.Sprintf(`{"content":{"parts":[{"text":%s,"thought":true}],"role":"model"},"partial":%v%s,"invocationId":"e-8","author":"classifier","id":"ev-t"}`, text, partial, extra)
}

// brokenReader returns its data, then an error.
type brokenReader struct {
	data string
	err  error
}

func (r *brokenReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestDecoderConnectionBreaks(t *testing.T) {
	reset := errors.New("connection reset by peer")
	t.Run("after the handed-over call: nothing is lost", func(t *testing.T) {
		got, err := decodeAll(t, &brokenReader{data: body(classify.Frames()), err: reset})
		if err != nil || got[len(got)-1] != "run_status [e-1] requires_action" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("mid-turn: the read error", func(t *testing.T) {
		_, err := decodeAll(t, &brokenReader{data: body(classify.Partials()[:2]) + "data: {\"cont", err: reset})
		if !errors.Is(err, reset) {
			t.Fatalf("err = %v, want the reset", err)
		}
	})
	t.Run("errors are sticky", func(t *testing.T) {
		d := adk.NewDecoder(&brokenReader{err: reset})
		d.Next() // in_progress
		_, err1 := d.Next()
		_, err2 := d.Next()
		if err1 == nil || err1 != err2 {
			t.Fatalf("%v then %v", err1, err2)
		}
	})
}

func TestDecoderResumedRunKeepsItsInvocation(t *testing.T) {
	d := adk.NewDecoder(strings.NewReader(body(confirm.Frames())))
	d.SetSession("s-1", "e-1")
	ev, _ := d.Next()
	if ev.RunID != "e-1" {
		t.Fatalf("in_progress of a resumed run: run %q, want e-1", ev.RunID)
	}
}
