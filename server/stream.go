package server

import (
	"errors"
	"net/http"
	"sync"
	"time"
)

// eventStream writes SSE frames to one client and flushes each at once. A
// comment frame goes out when the stream has been quiet for keepAlive, so
// proxies and the phone's network stack don't drop a slow run. Safe for
// concurrent use: the keep-alive ticker and the capture both write.
type eventStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	err     error // first write error; the client is gone
	closed  bool
	lastOut time.Time
	stop    chan struct{}
	done    chan struct{}
}

var (
	keepAliveFrame  = []byte(": keep-alive\n\n")
	errStreamClosed = errors.New("event stream closed")
)

// startStream sends the SSE headers and starts the keep-alive ticker.
func startStream(w http.ResponseWriter, keepAlive time.Duration) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &eventStream{w: w, rc: http.NewResponseController(w), lastOut: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.keepAlive(keepAlive)
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

// keepAlive writes a comment whenever the stream has been quiet for
// every: the timer is set to fire one interval after the last write, so
// a silence never lasts longer than every (a ticker at a fixed phase lets
// it run up to half an interval more, which mobile carriers punish).
func (s *eventStream) keepAlive(every time.Duration) {
	defer close(s.done)
	if every <= 0 {
		<-s.stop
		return
	}
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			quiet := time.Since(s.lastOut)
			if quiet >= every {
				if err := s.writeLocked(keepAliveFrame); err != nil {
					// The client is gone (or the stream closed): nothing
					// more to keep alive.
					s.mu.Unlock()
					return
				}
				quiet = 0
			}
			s.mu.Unlock()
			t.Reset(max(every-quiet, 0))
		}
	}
}

// close stops the keep-alive ticker; nothing is written afterwards.
func (s *eventStream) close() {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
