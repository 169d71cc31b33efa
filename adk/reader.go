package adk

import (
	"bytes"
	"io"

	"github.com/brainwire/brainwire/sse"
)

// EventReader reads the ADK events of a /run_sse response body. The API
// server frames each event as one "data: <JSON>" line and a blank line,
// with no event names, ids or end marker: the body's end is the end of
// the stream. It is not safe for concurrent use.
type EventReader struct {
	sr   *sse.Reader
	fast fastDecoder
}

// NewEventReader returns an EventReader reading the event stream r.
func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{sr: sse.NewReader(r)}
}

// Next returns the next event, an error frame among them (Event.Err). At
// the end of the body it returns io.EOF; a read error is returned as is.
// A payload that is neither an event nor an error frame is an error. The
// returned event's Parts are valid until the next call. Frames with no
// payload (a proxy's keep-alive) are skipped.
func (r *EventReader) Next() (Event, error) {
	for {
		sev, err := r.sr.Next()
		if err != nil {
			return Event{}, err
		}
		if len(bytes.TrimSpace(sev.Data)) == 0 {
			continue
		}
		if ev, ok := r.fast.decode(sev.Data); ok {
			return ev, nil
		}
		return decodePayload(sev.Data)
	}
}
