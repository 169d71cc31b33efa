package server

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/capture"
)

// encoder writes a capture's events in the wire protocol of the route the
// client called (capturev2, v1, agui). It may keep state across the
// capture's events: one per capture.
type encoder interface {
	Encode(dst []byte, ev brainwire.CaptureEvent) []byte
}

// runCapture runs req's capture, under the request's Idempotency-Key if it
// has one, and streams its events to the client in the protocol of the
// encoder newEncoder makes for it. Every protocol streams its captures
// here; a capture refused before it runs is a JSON error instead. A client
// that cannot be written to is gone: the capture's run stops.
func (s *Server) runCapture(w http.ResponseWriter, r *http.Request, req capture.Request, newEncoder func(brainwire.Capture) encoder) {
	run, err := s.capture.Start(r.Context(), req)
	if err != nil {
		if errors.Is(err, capture.ErrKeyRunning) {
			w.Header().Set("Retry-After", strconv.Itoa(int(keyRetryAfter/time.Second)))
		}
		writeError(w, err)
		return
	}
	if run.Replayed() {
		w.Header().Set(headerReplayed, "true")
	}
	stream := startStream(w, s.cfg.KeepAlive)
	defer stream.close()
	enc := newEncoder(run.Capture())
	var buf []byte
	for ev := range run.Events() {
		if buf = enc.Encode(buf[:0], ev); len(buf) > 0 && stream.write(buf) != nil {
			break
		}
	}
}

// eventStream writes SSE frames to one client and flushes each at once. A
// comment frame goes out when the stream has been quiet for keepAlive, so
// proxies and the phone's network stack don't drop a slow run. Safe for
// concurrent use: the keep-alive timer and the capture both write. The
// timer runs its function on a goroutine of its own only when it fires,
// so a quiet stream costs no goroutine.
type eventStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	err     error // first write error; the client is gone
	closed  bool
	lastOut time.Time
	every   time.Duration
	timer   *time.Timer // nil without keep-alive
}

var (
	keepAliveFrame  = []byte(": keep-alive\n\n")
	errStreamClosed = errors.New("event stream closed")
)

// startStream sends the SSE headers and starts the keep-alive timer.
func startStream(w http.ResponseWriter, keepAlive time.Duration) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &eventStream{w: w, rc: http.NewResponseController(w), lastOut: time.Now(), every: keepAlive}
	if keepAlive > 0 {
		s.mu.Lock()
		s.timer = time.AfterFunc(keepAlive, s.keepAlive)
		s.mu.Unlock()
	}
	return s
}

// write sends one or more complete frames and flushes them.
func (s *eventStream) write(frames []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(frames)
}

func (s *eventStream) writeLocked(frames []byte) error {
	if s.closed {
		return errStreamClosed
	}
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write(frames); err != nil {
		s.err = err
		return err
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
		return err
	}
	s.lastOut = time.Now()
	return nil
}

// keepAlive writes a comment if the stream has been quiet for every, and
// sets the timer to fire one interval after the last write, so a silence
// never lasts longer than every (a ticker at a fixed phase lets it run up
// to half an interval more, which mobile carriers punish).
func (s *eventStream) keepAlive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	quiet := time.Since(s.lastOut)
	if quiet >= s.every {
		if err := s.writeLocked(keepAliveFrame); err != nil {
			// The client is gone: nothing more to keep alive.
			return
		}
		quiet = 0
	}
	s.timer.Reset(max(s.every-quiet, 0))
}

// close stops the keep-alive timer; nothing is written afterwards (a
// timer function already under way finds the stream closed).
func (s *eventStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
}
