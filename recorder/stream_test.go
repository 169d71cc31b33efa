package recorder

import (
	"fmt"
	"reflect"
	"testing"
)

type parsed struct {
	events  []string
	pending string
}

func parseAll(pieces ...string) parsed {
	var p streamParser
	var out parsed
	for _, piece := range pieces {
		p.feed([]byte(piece), func(name, data []byte) {
			out.events = append(out.events, fmt.Sprintf("%s|%s", name, data))
		})
	}
	out.pending = string(p.pending())
	return out
}

// TestStreamParserSplitAnywhere feeds streams in two pieces split at every
// offset, and byte by byte: the events must not depend on how the bytes
// arrive (inside a line, a CRLF pair or a UTF-8 character).
func TestStreamParserSplitAnywhere(t *testing.T) {
	streams := map[string]struct {
		wire string
		want parsed
	}{
		"foundry framing": {
			wire: "event: thread.run.created\ndata: {\"id\":\"run_1\"}\n\nevent: done\ndata: [DONE]\n\n",
			want: parsed{events: []string{`thread.run.created|{"id":"run_1"}`, "done|[DONE]"}},
		},
		"crlf, comments, multi-line data": {
			wire: ": keep-alive\r\n\r\nevent: a\r\ndata: one\r\ndata:two\r\nid: 7\r\nretry: 10\r\n\r\n",
			want: parsed{events: []string{"a|one\ntwo"}},
		},
		"bare CR and UTF-8": {
			wire: "event: thread.message.delta\rdata: {\"value\":\"李明 🍜 café\"}\r\r",
			want: parsed{events: []string{`thread.message.delta|{"value":"李明 🍜 café"}`}},
		},
		"cut mid-event": {
			wire: "event: a\ndata: 1\n\nevent: thread.message.delta\ndata: {\"val",
			want: parsed{events: []string{"a|1"}, pending: "event: thread.message.delta\ndata: {\"val"},
		},
		"last event without blank line": {
			wire: "event: a\ndata: 1\n\nevent: done\ndata: [DONE]\n",
			want: parsed{events: []string{"a|1"}, pending: "event: done\ndata: [DONE]\n"},
		},
	}
	for name, s := range streams {
		t.Run(name, func(t *testing.T) {
			if got := parseAll(s.wire); !reflect.DeepEqual(got, s.want) {
				t.Fatalf("whole: got %#v, want %#v", got, s.want)
			}
			for i := 1; i < len(s.wire); i++ {
				if got := parseAll(s.wire[:i], s.wire[i:]); !reflect.DeepEqual(got, s.want) {
					t.Fatalf("split at %d: got %#v, want %#v", i, got, s.want)
				}
			}
			var bytes []string
			for i := range len(s.wire) {
				bytes = append(bytes, s.wire[i:i+1])
			}
			if got := parseAll(bytes...); !reflect.DeepEqual(got, s.want) {
				t.Fatalf("byte by byte: got %#v, want %#v", got, s.want)
			}
		})
	}
}
