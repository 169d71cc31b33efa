package replay

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
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
	if f.CutStream > 0 && f.CutEvent > 0 {
		next = &cutTransport{next: next, stream: f.CutStream, event: f.CutEvent}
	}
	if f.FailRequest > 0 {
		next = &statusTransport{next: next, request: f.FailRequest, status: f.FailStatus, retryAfterMs: f.RetryAfterMs}
	}
	return next
}

// apply marks in the recording the faults replay injects.
func (f Faults) apply(fx *recorder.Fixture) error {
	if f.SplitUTF8 > 0 {
		return splitInsideRunes(fx, f.SplitUTF8)
	}
	return nil
}

// statusTransport answers the chosen request with an error status and the
// service's error body, as a throttled or failing service would, without
// sending it.
type statusTransport struct {
	next                          http.RoundTripper
	request, status, retryAfterMs int

	mu   sync.Mutex
	seen int
}

func (t *statusTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.seen++
	n := t.seen
	t.mu.Unlock()
	if n != t.request {
		return t.next.RoundTrip(req)
	}
	if req.Body != nil {
		req.Body.Close()
	}
	code, msg := "server_error", "The service encountered an internal error."
	h := http.Header{"Content-Type": {"application/json"}}
	if t.status == http.StatusTooManyRequests {
		code, msg = "rate_limit_exceeded", "Rate limit is exceeded. Try again in 20 seconds."
		h.Set("Retry-After", "20")
		if t.retryAfterMs > 0 {
			h.Del("Retry-After")
			h.Set("retry-after-ms", strconv.Itoa(t.retryAfterMs))
		}
	}
	body := fmt.Sprintf(`{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":%q}}`, msg, code)
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", t.status, http.StatusText(t.status)),
		StatusCode:    t.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
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

// cutTransport breaks one streamed response the way a dropped connection
// does: the reader gets the events before the chosen one, half of it,
// and then a read error.
type cutTransport struct {
	next          http.RoundTripper
	stream, event int

	mu   sync.Mutex
	seen int
}

func (c *cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return resp, nil
	}
	c.mu.Lock()
	c.seen++
	n := c.seen
	c.mu.Unlock()
	if n == c.stream {
		resp.Body = &cutBody{rc: resp.Body, event: c.event}
	}
	return resp, nil
}

// cutBody passes events through until the chosen one, which it holds until
// it is complete, then delivers its first half and fails.
type cutBody struct {
	rc     io.ReadCloser
	event  int    // the event to cut, from 1
	done   int    // complete events passed through
	lf     bool   // the last byte seen was '\n'
	held   []byte // the event being cut
	out    []byte // bytes ready for the reader
	err    error
	closed bool
	buf    [4096]byte
}

func (b *cutBody) Read(p []byte) (int, error) {
	buf := b.buf[:]
	for {
		if len(b.out) > 0 {
			n := copy(p, b.out)
			b.out = b.out[n:]
			return n, nil
		}
		if b.err != nil {
			return 0, b.err
		}
		n, err := b.rc.Read(buf)
		b.take(buf[:n])
		if err != nil && b.err == nil {
			b.out = append(b.out, b.held...) // the stream ended before the event to cut
			b.held = nil
			b.err = err
		}
	}
}

func (b *cutBody) take(data []byte) {
	for _, c := range data {
		if b.err != nil {
			return
		}
		if b.done < b.event-1 {
			b.out = append(b.out, c)
		} else {
			b.held = append(b.held, c)
		}
		end := c == '\n' && b.lf
		b.lf = c == '\n'
		if !end {
			continue
		}
		b.done++
		if b.done == b.event {
			b.out = append(b.out, b.held[:len(b.held)/2]...)
			b.held = nil
			b.err = errCut
			b.rc.Close() // the rest of the stream is never delivered
			b.closed = true
			return
		}
	}
}

func (b *cutBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	return b.rc.Close()
}
