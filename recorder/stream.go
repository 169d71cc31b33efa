package recorder

import (
	"bytes"

	"github.com/brainwire/brainwire/sse"
)

// streamParser splits a server-sent event stream into events as its bytes
// arrive, however they are split across reads (inside a line, a CRLF pair
// or a UTF-8 character). It runs on the reader's goroutine, so it copies
// as little as it can: a line that arrived whole is parsed where it lies.
type streamParser struct {
	line    []byte // the start of a line split across reads
	name    []byte
	data    []byte
	hasData bool
	// raw holds the bytes since the last complete event, so that a stream
	// cut mid-event can be recorded as it was received.
	raw    []byte
	prevCR bool // the last line ended in CR: a leading LF belongs to it
}

// feed parses b and calls emit for every event it completes. name and data
// are only valid during the call.
func (p *streamParser) feed(b []byte, emit func(name, data []byte)) {
	rest := b
	tail := 0 // b[tail:] belongs to the event not yet complete
	for len(rest) > 0 {
		if p.prevCR {
			p.prevCR = false
			if rest[0] == '\n' {
				rest = rest[1:]
				if len(p.raw) == 0 && tail == len(b)-len(rest)-1 {
					tail++ // the LF ends the last event, not the next one
				}
				continue
			}
		}
		i := sse.LineEnd(rest)
		if i < 0 {
			p.line = append(p.line, rest...)
			break
		}
		line := rest[:i]
		if len(p.line) > 0 {
			p.line = append(p.line, line...)
			line = p.line
		}
		p.prevCR = rest[i] == '\r'
		rest = rest[i+1:]
		if p.endLine(line, emit) {
			p.raw = p.raw[:0]
			tail = len(b) - len(rest)
		}
		p.line = p.line[:0]
	}
	p.raw = append(p.raw, b[tail:]...)
}

// endLine handles one line and reports whether it was the blank line that
// ends an event block.
func (p *streamParser) endLine(line []byte, emit func(name, data []byte)) bool {
	if len(line) == 0 {
		if p.hasData {
			emit(p.name, p.data)
		}
		p.name, p.data, p.hasData = p.name[:0], p.data[:0], false
		return true
	}
	field, value, found := bytes.Cut(line, []byte{':'})
	if found && len(field) == 0 {
		return false // a comment
	}
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(field) {
	case "event":
		p.name = append(p.name[:0], value...)
	case "data":
		if p.hasData {
			p.data = append(p.data, '\n')
		}
		p.data = append(p.data, value...)
		p.hasData = true
	}
	return false
}

// pending returns the bytes received since the last complete event: the
// start of an event the stream never finished.
func (p *streamParser) pending() []byte {
	if len(bytes.TrimSpace(p.raw)) == 0 {
		return nil
	}
	return p.raw
}
