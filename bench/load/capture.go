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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/brainwire/brainwire/internal/textcut"
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
	url    string // the capture route's
	key    string
	body   []byte // the capture's JSON
	client *http.Client
	// keyed, each capture has an Idempotency-Key: keys' prefix, then the
	// capture's name.
	keyed string
}

func newPhone(addr, key, text string, h2c, keyed bool, dials *atomic.Int64) (*phone, error) {
	body, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		return nil, err
	}
	var dialer net.Dialer
	tr := &http.Transport{
		DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
	}
	if h2c {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
		// As an ingress opens a few connections to a replica: Go's
		// transport otherwise dials for every request that finds no
		// connection with a stream free while the first is being set up
		// (a cold round of 10,000 dialled 13,386).
		tr.MaxConnsPerHost = 64
	} else {
		tr.DisableKeepAlives = true
	}
	p := &phone{url: "http://" + addr + DefaultPath, key: key, body: body, client: &http.Client{Transport: tr}}
	if keyed {
		// Keys of this run only: the server may keep an earlier run's.
		p.keyed = fmt.Sprintf("load-%d-", time.Now().UnixNano())
	}
	return p, nil
}

// capture runs one capture, named name (its key's end), that was due at
// start, within timeout. The connection (the stream, with h2c) ends once
// COMPLETE is read, as the app drops it.
func (p *phone) capture(ctx context.Context, start time.Time, timeout time.Duration, name string) Capture {
	var c Capture
	ctx, cancel := context.WithDeadline(ctx, start.Add(timeout))
	defer cancel()
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
	resp, err := p.client.Do(req)
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
		var ev struct{ Type, Message string }
		if err := json.Unmarshal(data, &ev); err != nil {
			c.Err = "stream: unreadable event"
			return
		}
		typ := ev.Type
		switch typ {
		case "STEP_START", "STEP_END":
		case "CLASSIFIED", "LOW_CONFIDENCE", "MISUNDERSTOOD", "UNRESOLVED":
			c.Outcome, c.OutcomeType = time.Since(start), typ
		case "ERROR":
			c.Outcome, c.OutcomeType = time.Since(start), typ
			c.Err = "ERROR event: " + textcut.Ellipsis(ev.Message, 100)
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
