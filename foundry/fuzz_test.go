package foundry

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/fuzztest"
	"github.com/brainwire/brainwire/sse"
)

// referenceDecode decodes a stream frame by frame: each frame by a Decoder
// of its own that reads that frame alone, seeded with the ids and state
// the frames before it left. It returns the events and the error the whole stream must end
// with: io.EOF, or a non-nil error whose text contains errHas.
func referenceDecode(stream []byte) (evs []brainwire.AgentEvent, wantEOF bool, errHas string) {
	var threadID, runID string
	var status brainwire.RunStatus
	sawError := false
	sr := sse.NewReader(bytes.NewReader(stream))
	for {
		f, err := sr.Next()
		if err != nil {
			if status.Terminal() || status == brainwire.RunRequiresAction || sawError {
				return evs, true, ""
			}
			return evs, false, "event stream ended without done"
		}
		name, data := string(f.Name), string(f.Data)
		switch name {
		case "done":
			return evs, true, ""
		case "error":
			sawError = true
		}
		d := NewDecoder(strings.NewReader(frame(name, data)))
		d.SetRun(threadID, runID)
		for {
			ev, err := d.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					return evs, false, err.Error()
				}
				break
			}
			evs = append(evs, ev)
		}
		threadID, runID = d.ThreadID(), d.RunID()
		if d.Status() != "" {
			status = d.Status()
		}
	}
}

// frame is one event on the wire.
func frame(name, data string) string {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	for line := range strings.SplitSeq(data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// FuzzDecoder decodes any stream, whole and one byte at a time. Both must
// yield exactly the events and the end of referenceDecode: the decoder's state
// (ids, status, queued events) must carry across frames as each frame
// decoded alone says. Errors must be sticky.
func FuzzDecoder(f *testing.F) {
	for _, s := range fuzztest.Streams(f, 2048) {
		f.Add(s)
	}
	for _, s := range []string{
		"",
		"event: thread.message.delta\ndata: {\"delta\":{\"content\":[{\"text\":{\"value\":\"\\q\"}}]}}\n\n",
		"event: thread.run.completed\ndata: {\"id\":\"run_1\",\n\n",
		"event: thread.created\ndata: nope\n\n",
		"event: thread.run.step.completed\ndata: not json\n\nevent: thread.something.new\ndata: {}\n\n",
		"event: error\ndata: Internal server error\n\n",
		"event: error\ndata: {\"error\":{\"code\":429,\"message\":null},\"message\":\"m\"}\n\n",
		"event: thread.run.requires_action\ndata: {\"id\":\"r\",\"status\":\"requires_action\",\"required_action\":{\"submit_tool_outputs\":{\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}}}\n\n",
		"event: thread.run.created\ndata: {\"id\":\"r\"}\n\nevent: done\ndata: [DONE]\n\nevent: thread.run.failed\ndata: {}\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		defer fuzztest.Deadline(10 * time.Second)()
		want, wantEOF, errHas := referenceDecode(stream)
		var first []brainwire.AgentEvent
		var firstErr error
		for i, r := range []io.Reader{bytes.NewReader(stream), iotest.OneByteReader(bytes.NewReader(stream))} {
			d := NewDecoder(r)
			var got []brainwire.AgentEvent
			var err error
			for {
				var ev brainwire.AgentEvent
				if ev, err = d.Next(); err != nil {
					break
				}
				got = append(got, ev)
			}
			if _, again := d.Next(); again != err {
				t.Fatalf("error not sticky: %v, then %v", err, again)
			}
			switch {
			case wantEOF && err != io.EOF:
				t.Fatalf("ended with %v, want io.EOF", err)
			case !wantEOF && (err == io.EOF || !strings.Contains(err.Error(), errHas)):
				t.Fatalf("ended with %v, want an error containing %q", err, errHas)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("events:\n got  %+v\n want %+v", got, want)
			}
			if i == 0 {
				first, firstErr = got, err
			} else if err.Error() != firstErr.Error() || !reflect.DeepEqual(got, first) {
				t.Fatalf("one byte at a time: %v, %+v; whole: %v, %+v", err, got, firstErr, first)
			}
		}
	})
}
