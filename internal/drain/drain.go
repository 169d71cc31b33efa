// Package drain gives a streamed HTTP response's connection back to the
// transport once the stream has said all it will.
//
// A stream decoder stops at the stream's end marker (Foundry's done event,
// the Responses API's [DONE] or terminal event), but the body goes on for
// a few bytes: the last chunk's terminator, or the end of an HTTP/2
// stream. Closed before those are read, the body costs its connection
// (HTTP/1.1: the transport must close it, and the next call dials again)
// or resets the stream (HTTP/2).
//
// The reader marks the request's context (WithMark) and, once it read the
// end marker, says so (Mark.End) before closing the body. Transport, at
// the bottom of the transport stack, then reads what is left of the body
// in the background and closes it, so that the layers above (telemetry's
// spans, the recorder) see the body closed at once, as before. The read
// may outlive the capture that made the request by a moment (Wait): the
// request's context lingers (package linger).
package drain

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/brainwire/brainwire/internal/linger"
)

// Max is the most read after the end marker before giving up on reuse,
// and Wait the longest it may take once the request's context is done.
const (
	Max  = 4 << 10
	Wait = time.Second
)

// Mark records that a stream's end marker was read.
type Mark struct {
	ended  atomic.Bool
	linger *linger.Linger
}

// End says the end marker was read: what is left of the body is its end.
func (m *Mark) End() {
	m.ended.Store(true)
	m.linger.Hold()
}

type markKey struct{}

// WithMark returns a context for a request whose body is a stream with an
// end marker. It ends when parent does, as parent's own would, except
// that once the end marker was read it gives the rest of the body Wait
// to arrive: the capture that read the stream may well be over by then.
func WithMark(parent context.Context) (context.Context, *Mark) {
	ctx, l := linger.New(parent, Wait)
	m := &Mark{linger: l}
	return context.WithValue(ctx, markKey{}, m), m
}

// Transport wraps next: the body of a request marked with WithMark, closed
// after Mark.End, is read to its end (at most Max bytes) in the
// background before it is closed. Any other body closes at once.
func Transport(next http.RoundTripper) http.RoundTripper { return transport{next} }

type transport struct{ next http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	m, marked := req.Context().Value(markKey{}).(*Mark)
	resp, err := t.next.RoundTrip(req)
	if !marked {
		return resp, err
	}
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		m.linger.Release()
		return resp, err
	}
	resp.Body = &body{ReadCloser: resp.Body, mark: m}
	return resp, nil
}

type body struct {
	io.ReadCloser
	mark *Mark
}

func (b *body) Close() error {
	if !b.mark.ended.Load() {
		err := b.ReadCloser.Close()
		b.mark.linger.Release()
		return err
	}
	go func() {
		_, _ = io.CopyN(io.Discard, b.ReadCloser, Max)
		_ = b.ReadCloser.Close()
		b.mark.linger.Release()
	}()
	return nil
}
