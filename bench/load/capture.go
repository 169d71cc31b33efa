package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Capture is how one capture went, as its phone saw it. Durations count
// from the moment the capture was due to start (before its connection was
// dialled), so that a server slow to accept shows.
type Capture struct {
	FirstByte time.Duration // first byte of the response body (STEP_START)
	Outcome   time.Duration // the outcome event (CLASSIFIED, ..., or ERROR)
	Complete  time.Duration // COMPLETE
	// OutcomeType is the outcome event's type.
	OutcomeType string
	// Err is the kind of failure ("" when the stream reached COMPLETE
	// without ERROR): short, stable texts that group well.
	Err string
}

// phone runs captures against one server: each on its own HTTP/1.1
// connection, as phones reach a replica directly, or (with h2c) as
// streams sharing a few HTTP/2 connections without TLS, as an ingress
// that speaks HTTP/2 to its replicas forwards them.
type phone struct {
	addr string // host:port
	key  string
	body []byte // the capture's JSON
	// request is the whole HTTP/1.1 request (without h2c), but for the
	// blank line that ends its header and the body, unless keyed.
	request []byte
	// keyed, each capture has an Idempotency-Key: keys' prefix, then the
	// capture's name.
	keyed  string
	dialer net.Dialer
	dials  *counter
	h2c    *http.Client // nil: a connection per capture
	url    string       // the capture route's, with h2c
}

func newPhone(addr, path, key, text string, h2c, keyed bool, dials *counter) (*phone, error) {
	body, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		return nil, err
	}
	p := &phone{addr: addr, key: key, body: body, dials: dials}
	if keyed {
		// Keys of this run only: the server may keep an earlier run's.
		p.keyed = fmt.Sprintf("load-%d-", time.Now().UnixNano())
	}
	if !h2c {
		var b bytes.Buffer
		fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Accept: text/event-stream\r\nContent-Length: %d\r\n", path, addr, key, len(body))
		p.request = b.Bytes()
	} else {
		tr := &http.Transport{
			Protocols: new(http.Protocols),
			// As an ingress opens a few connections to a replica: Go's
			// transport otherwise dials for every request that finds no
			// connection with a stream free while the first is being set
			// up (a cold round of 10,000 dialled 13,386).
			MaxConnsPerHost: 64,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.add(1)
				return p.dialer.DialContext(ctx, network, addr)
			},
		}
		tr.Protocols.SetUnencryptedHTTP2(true)
		p.h2c, p.url = &http.Client{Transport: tr}, "http://"+addr+path
	}
	return p, nil
}

// capture runs one capture, named name (its key's end), that was due at
// start, within timeout.
func (p *phone) capture(ctx context.Context, start time.Time, timeout time.Duration, name string) Capture {
	var c Capture
	ctx, cancel := context.WithDeadline(ctx, start.Add(timeout))
	defer cancel()
	if p.h2c != nil {
		return p.captureH2C(ctx, start, name)
	}
	p.dials.add(1)
	conn, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		c.Err = "dial: " + errKind(err)
		return c
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	req := make([]byte, 0, len(p.request)+len(p.body)+64)
	req = append(req, p.request...)
	if p.keyed != "" {
		req = append(req, "Idempotency-Key: "+p.keyed+name+"\r\n"...)
	}
	req = append(append(req, "\r\n"...), p.body...)
	if _, err := conn.Write(req); err != nil {
		c.Err = "write request: " + errKind(err)
		return c
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Err = "read response: " + errKind(err)
		return c
	}
	c.readResponse(resp, start)
	return c
}

// captureH2C runs one capture as a stream on the shared HTTP/2
// connections; the stream is reset once COMPLETE is read.
func (p *phone) captureH2C(ctx context.Context, start time.Time, name string) Capture {
	var c Capture
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(p.body))
	if err != nil {
		c.Err = "request: " + err.Error()
		return c
	}
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if p.keyed != "" {
		req.Header.Set("Idempotency-Key", p.keyed+name)
	}
	resp, err := p.h2c.Do(req)
	if err != nil {
		c.Err = "request: " + errKind(err)
		return c
	}
	c.readResponse(resp, start)
	return c
}

// readResponse reads a capture's answer: its event stream to COMPLETE,
// or the status it failed with.
func (c *Capture) readResponse(resp *http.Response, start time.Time) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Err = "http " + strconv.Itoa(resp.StatusCode)
		return
	}
	c.readStream(bufio.NewReaderSize(resp.Body, 2048), start)
}

// readStream reads capture-v2 events to COMPLETE and closes nothing: the
// caller drops the connection right after COMPLETE, as the app does.
func (c *Capture) readStream(r *bufio.Reader, start time.Time) {
	first := true
	for {
		line, err := r.ReadSlice('\n')
		if first && len(line) > 0 {
			c.FirstByte, first = time.Since(start), false
		}
		if err != nil {
			switch {
			case errors.Is(err, bufio.ErrBufferFull):
				c.Err = "stream: event line too long"
			case c.Outcome == 0:
				c.Err = "stream ended before the outcome: " + errKind(err)
			default:
				c.Err = "stream ended before COMPLETE: " + errKind(err)
			}
			return
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue // blank lines between events, keep-alive comments
		}
		typ := eventType(data)
		switch typ {
		case "STEP_START", "STEP_END":
		case "CLASSIFIED", "LOW_CONFIDENCE", "MISUNDERSTOOD", "UNRESOLVED":
			c.Outcome, c.OutcomeType = time.Since(start), typ
		case "ERROR":
			c.Outcome, c.OutcomeType = time.Since(start), typ
			c.Err = "ERROR event: " + errorMessage(data)
		case "COMPLETE":
			c.Complete = time.Since(start)
			if c.Outcome == 0 && c.Err == "" {
				c.Err = "COMPLETE without an outcome"
			}
			return
		default:
			c.Err = "stream: unexpected event " + strconv.Quote(typ)
			return
		}
	}
}

// eventType reads "type" from a capture-v2 event, which the server always
// writes first.
func eventType(data []byte) string {
	const key = `{"type":"`
	rest, ok := bytes.CutPrefix(data, []byte(key))
	if !ok {
		return ""
	}
	if i := bytes.IndexByte(rest, '"'); i >= 0 {
		return string(rest[:i])
	}
	return ""
}

// errorMessage is an ERROR event's message, cut short so that kinds group.
func errorMessage(data []byte) string {
	var ev struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(data), &ev); err != nil {
		return "(unreadable)"
	}
	const max = 100
	if len(ev.Message) > max {
		return ev.Message[:max] + "…"
	}
	return ev.Message
}

// errKind names a network error by what happened, without addresses or
// ports, so that equal failures count as one kind.
func errKind(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.As(err, &errno):
		return errno.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return err.Error()
}
