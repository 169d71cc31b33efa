package replay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/brainwire/brainwire/recorder"
)

// Faults are failures Record injects into the agent service's answers, as
// a flaky network or a failing service would, so that a fixture holds
// them and replay reproduces them. The zero value injects none.
type Faults struct {
	// CutStream and CutEvent cut the CutStream-th streamed response (from
	// 1) in the middle of its CutEvent-th event, like a connection reset.
	CutStream, CutEvent int
	// FailRequest answers the FailRequest-th request (from 1) with
	// FailStatus and the service's error body, without sending it.
	FailRequest, FailStatus int
	// RetryAfterMs, when set, has a 429 ask for that wait in
	// retry-after-ms instead of Retry-After: 20.
	RetryAfterMs int
	// SplitUTF8 makes replay split its writes inside the first SplitUTF8
	// multibyte characters of the first streamed response.
	SplitUTF8 int
}

// transport puts the faults that happen on the wire under next.
func (f Faults) transport(next http.RoundTripper) http.RoundTripper {
	if f.CutStream <= 0 || f.CutEvent <= 0 {
		f.CutStream = 0
	}
	if f.CutStream == 0 && f.FailRequest <= 0 {
		return next
	}
	return &faultTransport{f: f, next: next}
}

// faultTransport answers the chosen request with an error status and the
// service's error body, as a throttled or failing service would, without
// sending it; and breaks the chosen streamed response the way a dropped
// connection does: the reader gets the events before the chosen one, half
// of it, and then a read error.
type faultTransport struct {
	f    Faults
	next http.RoundTripper

	mu                sync.Mutex
	requests, streams int
}

func (t *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.requests++
	n := t.requests
	t.mu.Unlock()
	if n == t.f.FailRequest {
		if req.Body != nil {
			req.Body.Close()
		}
		return t.f.failure(req), nil
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || t.f.CutStream == 0 {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return resp, nil
	}
	t.mu.Lock()
	t.streams++
	n = t.streams
	t.mu.Unlock()
	if n == t.f.CutStream {
		resp.Body = &cutBody{Closer: resp.Body, r: bufio.NewReader(resp.Body), event: t.f.CutEvent}
	}
	return resp, nil
}

// failure is the service's answer to a request it refuses with FailStatus.
func (f Faults) failure(req *http.Request) *http.Response {
	code, msg := "server_error", "The service encountered an internal error."
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json")
	if f.FailStatus == http.StatusTooManyRequests {
		code, msg = "rate_limit_exceeded", "Rate limit is exceeded. Try again in 20 seconds."
		if f.RetryAfterMs > 0 {
			w.Header().Set("retry-after-ms", strconv.Itoa(f.RetryAfterMs))
		} else {
			w.Header().Set("Retry-After", "20")
		}
	}
	w.WriteHeader(f.FailStatus)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":%q}}`, msg, code)
	resp := w.Result()
	resp.Request = req
	return resp
}

// splitInsideRunes sets split offsets in the first streamed response: one
// inside each of its first n multibyte characters.
func splitInsideRunes(fx *recorder.Fixture, n int) error {
	for i := range fx.Exchanges {
		rs := fx.Exchanges[i].Response
		if rs == nil || len(rs.Events) == 0 {
			continue
		}
		var wire []byte
		for _, ev := range rs.Events {
			wire = ev.AppendWire(wire)
		}
		wire = append(wire, rs.PartialBytes()...)
		var at []int
		for off := 0; off < len(wire) && len(at) < n; {
			r, size := utf8.DecodeRune(wire[off:])
			if r != utf8.RuneError && size > 1 {
				at = append(at, off+size/2)
			}
			off += size
		}
		if len(at) == 0 {
			return errors.New("record: split inside UTF-8: the first streamed response has no multibyte characters")
		}
		rs.SplitAt = at
		return nil
	}
	return errors.New("record: split inside UTF-8: the recording has no streamed response")
}

// errCut is the read error of a stream cut by -cut.
var errCut = errors.New("read: connection reset by peer (injected while recording)")

// cutBody passes lines through until the event to cut begins, holds that
// event until it is complete, then delivers its first half and fails.
type cutBody struct {
	io.Closer
	r     *bufio.Reader
	event int // the event to cut, from 1
	ended int // events ended so far
	held  []byte
	out   []byte // bytes ready for the reader
	err   error
}

func (b *cutBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		line, err := b.r.ReadBytes('\n')
		if b.ended < b.event-1 {
			b.out = line
		} else {
			b.held = append(b.held, line...)
		}
		if string(line) == "\n" {
			if b.ended++; b.ended == b.event {
				b.out, b.err = b.held[:len(b.held)/2], errCut
				continue
			}
		}
		if err != nil {
			b.out, b.held, b.err = append(b.out, b.held...), nil, err // the stream ended before the event to cut
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}
