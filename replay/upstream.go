package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/recorder"
)

// splitPause separates the pieces of a split write, so that the reader
// gets them in separate reads.
const splitPause = 2 * time.Millisecond

// Upstream is a fake agent service that answers with a fixture's recorded
// exchanges, in order. Each request must match the next recorded one
// (method, operation path, query, and the meaningful body fields); a
// request that does not is answered 400 and reported by Err with a diff.
//
// Responses are reproduced as recorded: status, headers, each event at its
// recorded offset (scaled by Speed), a stream cut mid-event (the partial
// bytes, then the connection is aborted), a body the client closed early
// (held open until the client goes away), a transport failure (the
// connection is aborted before any answer). Split offsets recorded in a
// response split its writes there.
//
// Aborting a connection panics with http.ErrAbortHandler, so serve an
// Upstream with an http.Server (httptest.NewServer), not by calling
// ServeHTTP directly.
type Upstream struct {
	// Beyond, when set, answers the requests that come once every
	// recorded exchange was served: a shadow's calls, which start after
	// the phone's stream ended and which the recording never saw.
	Beyond http.Handler

	exchanges []recorder.Exchange
	speed     float64
	closing   chan struct{}
	closeOnce sync.Once

	mu   sync.Mutex
	next int
	errs []error
}

// NewUpstream returns an Upstream serving exchanges. speed scales time: 0
// answers at once, 1 in real time, 2 twice as fast.
func NewUpstream(exchanges []recorder.Exchange, speed float64) *Upstream {
	if speed < 0 {
		speed = 0
	}
	return &Upstream{exchanges: exchanges, speed: speed, closing: make(chan struct{})}
}

// Close releases any response still waiting or held open.
func (u *Upstream) Close() { u.closeOnce.Do(func() { close(u.closing) }) }

// Err returns the requests that did not match the recording and the
// recorded exchanges that were never requested, or nil.
func (u *Upstream) Err() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	errs := slices.Clone(u.errs)
	if u.next < len(u.exchanges) && len(u.errs) == 0 {
		rq := u.exchanges[u.next].Request
		errs = append(errs, fmt.Errorf("the client made %d of the %d recorded requests; the first missing is #%d %s %s",
			u.next, len(u.exchanges), u.next+1, rq.Method, operationPath(rq.Path)))
	}
	return errors.Join(errs...)
}

func (u *Upstream) fail(err error) {
	u.mu.Lock()
	u.errs = append(u.errs, err)
	u.mu.Unlock()
}

// ServeHTTP implements http.Handler.
func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		u.fail(fmt.Errorf("reading the body of %s %s: %w", r.Method, r.URL.Path, err))
		return
	}
	u.mu.Lock()
	i := u.next
	if i >= len(u.exchanges) && u.Beyond != nil {
		// A shadow's call, which the recording never saw.
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		u.Beyond.ServeHTTP(w, r)
		return
	}
	if i >= len(u.exchanges) {
		u.mu.Unlock()
		err := fmt.Errorf("request #%d %s %s: the recording has only %d exchanges", i+1, r.Method, operationPath(r.URL.Path), len(u.exchanges))
		u.fail(err)
		writeAPIError(w, http.StatusBadRequest, "replay_unexpected_request", err.Error())
		return
	}
	ex := u.exchanges[i]
	if err := matchRequest(i, ex.Request, r, body); err != nil {
		u.errs = append(u.errs, err)
		u.mu.Unlock()
		writeAPIError(w, http.StatusBadRequest, "replay_mismatch", err.Error())
		return
	}
	u.next++
	u.mu.Unlock()

	rs := ex.Response
	if rs == nil {
		// The recorded request never got an answer.
		panic(http.ErrAbortHandler)
	}
	if !u.sleepUntil(r, t0, rs.Ms) {
		return
	}
	h := w.Header()
	for k, v := range rs.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Connection", "Date", "Keep-Alive":
			continue
		}
		h.Set(k, v)
	}
	if !rs.IsStream() {
		b := rs.BodyBytes()
		h.Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(rs.Status)
		w.Write(b)
		return
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(rs.Status)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	if !u.stream(w, rc, r, t0, rs) {
		return
	}
	switch {
	case rs.Error != "":
		panic(http.ErrAbortHandler)
	case rs.Closed:
		// The client stopped reading while the service was still
		// sending: keep the stream open until it goes away.
		select {
		case <-r.Context().Done():
		case <-u.closing:
		}
	}
}

// stream writes the recorded events, then any partial event, each at its
// time, cut at the recorded split offsets, and reports whether the client
// is still there.
func (u *Upstream) stream(w io.Writer, rc *http.ResponseController, r *http.Request, t0 time.Time, rs *recorder.Response) bool {
	off := 0 // of b in the stream
	write := func(b []byte, ms int64) bool {
		if !u.sleepUntil(r, t0, ms) {
			return false
		}
		for len(b) > 0 {
			n := len(b)
			for _, at := range rs.SplitAt {
				if at > off && at-off < n {
					n = at - off
				}
			}
			if _, err := w.Write(b[:n]); err != nil || rc.Flush() != nil {
				return false
			}
			off, b = off+n, b[n:]
			if len(b) > 0 && !u.pause(r, splitPause) {
				return false
			}
		}
		return true
	}
	for _, ev := range rs.Events {
		if !write(ev.AppendWire(nil), ev.Ms) {
			return false
		}
	}
	if p := rs.PartialBytes(); len(p) > 0 && !write(p, rs.EndMs) {
		return false
	}
	return u.sleepUntil(r, t0, rs.EndMs)
}

// sleepUntil waits until ms (scaled by speed) after t0; false when the
// client went away or the upstream closed first.
func (u *Upstream) sleepUntil(r *http.Request, t0 time.Time, ms int64) bool {
	if u.speed == 0 || ms <= 0 {
		return u.alive(r)
	}
	d := time.Until(t0.Add(time.Duration(float64(ms) * float64(time.Millisecond) / u.speed)))
	return u.pause(r, d)
}

func (u *Upstream) pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return u.alive(r)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-u.closing:
	}
	return false
}

func (u *Upstream) alive(r *http.Request) bool {
	select {
	case <-r.Context().Done():
		return false
	case <-u.closing:
		return false
	default:
		return true
	}
}

// writeAPIError answers in the agent service's error shape.
func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	type apiError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	}
	b, _ := json.Marshal(map[string]apiError{"error": {Message: msg, Type: "invalid_request_error", Code: code}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// sleep is the retry layer's wait in a replay: the recorded wait, scaled
// as the rest of the recording; none when replaying at once.
func (u *Upstream) sleep(ctx context.Context, d time.Duration) error {
	if u.speed == 0 {
		return ctx.Err()
	}
	return retry.Sleep(ctx, time.Duration(float64(d)/u.speed))
}
