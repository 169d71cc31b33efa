package recorder

import (
	"fmt"
	"reflect"
	"testing"
)

// TestParseStream parses streams that arrived byte by byte: each event
// is timed by the read that ended its blank line (here, the byte's
// offset), and a stream that ends mid-event keeps what it got.
func TestParseStream(t *testing.T) {
	for name, s := range map[string]struct {
		wire    string
		events  []string // name|data@ms
		partial string
	}{
		"foundry framing": {
			wire:   "event: thread.run.created\ndata: {\"id\":\"run_1\"}\n\nevent: done\ndata: [DONE]\n\n",
			events: []string{`thread.run.created|{"id":"run_1"}@47`, "done|[DONE]@73"},
		},
		"crlf, comments, multi-line data": {
			wire:   ": keep-alive\r\n\r\nevent: a\r\ndata: one\r\ndata:two\r\nid: 7\r\nretry: 10\r\n\r\n",
			events: []string{"a|one\ntwo@65"},
		},
		"bare CR and UTF-8": {
			wire:   "event: thread.message.delta\rdata: {\"value\":\"李明 🍜 café\"}\r\r",
			events: []string{`thread.message.delta|{"value":"李明 🍜 café"}@64`},
		},
		"cut mid-event": {
			wire:    "event: a\ndata: 1\n\nevent: thread.message.delta\ndata: {\"val",
			events:  []string{"a|1@17"},
			partial: "event: thread.message.delta\ndata: {\"val",
		},
		"last event without blank line": {
			wire:    "event: a\ndata: 1\n\nevent: done\ndata: [DONE]\n",
			events:  []string{"a|1@17"},
			partial: "event: done\ndata: [DONE]\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var reads []timedRead
			for i := range len(s.wire) {
				reads = append(reads, timedRead{ms: int64(i), end: i + 1})
			}
			evs, partial := parseStream([]byte(s.wire), reads)
			var got []string
			for _, ev := range evs {
				got = append(got, fmt.Sprintf("%s|%s@%d", ev.Name, ev.Payload(), ev.Ms))
			}
			if !reflect.DeepEqual(got, s.events) || string(partial) != s.partial {
				t.Fatalf("got %q, partial %q; want %q, %q", got, partial, s.events, s.partial)
			}
		})
	}
}
