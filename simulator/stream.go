package simulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/brainwire/brainwire/foundry/foundrywire"
	"github.com/brainwire/brainwire/internal/jsonw"
)

// sseEvent is one frame ready to write.
type sseEvent struct {
	name string
	data []byte
}

// stream writes a turn as server-sent events, pacing message chunks. A
// cancel ends it with cancelling/cancelled; a client that goes away leaves
// the run to finish at once, as the service keeps running it.
func (s *Simulator) stream(ctx context.Context, w http.ResponseWriter, t *turn) {
	rc, pace, err := s.openStream(w, true)
	if err != nil {
		s.runDetachedLocked(t, t.frames)
		return
	}
	for i, f := range t.frames {
		if f.pace {
			pace.pause(ctx, t.cancelCh)
		}
		if ctx.Err() != nil {
			s.runDetachedLocked(t, t.frames[i:])
			return
		}
		s.mu.Lock()
		if t.cancelled {
			tail := s.finishCancel(t)
			s.mu.Unlock()
			writeAll(w, rc, tail)
			return
		}
		payload := f.apply(s.now())
		var data []byte
		if f.event != "" {
			data, _ = jsonw.Marshal(payload) // the wire types always encode
		}
		s.mu.Unlock()
		if f.event == "" {
			continue
		}
		if err := writeEvent(w, rc, sseEvent{f.event, data}); err != nil {
			s.runDetachedLocked(t, t.frames[i+1:])
			return
		}
	}
	s.mu.Lock()
	var tail []sseEvent
	if t.cancelled {
		tail = s.finishCancel(t)
	} else {
		s.release(t)
		if t.done {
			tail = []sseEvent{doneFrame()}
		}
	}
	s.mu.Unlock()
	writeAll(w, rc, tail)
}

// openStream answers 200 with an event stream and returns its writer's
// controller and the stream's pacer; the Foundry faces ask proxies not
// to buffer or cache it (full).
func (s *Simulator) openStream(w http.ResponseWriter, full bool) (*http.ResponseController, *pacer, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	if full {
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return rc, newPacer(s.chunkDelay(), time.Now, &s.traffic.late), flush(rc)
}

// runDetachedLocked is runDetached for callers not holding s.mu.
func (s *Simulator) runDetachedLocked(t *turn, frames []frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runDetached(t, frames)
}

// runDetached applies frames without writing them; the caller holds s.mu.
func (s *Simulator) runDetached(t *turn, frames []frame) {
	for _, f := range frames {
		if t.cancelled {
			s.finishCancel(t)
			return
		}
		f.apply(s.now())
	}
	if t.cancelled {
		s.finishCancel(t)
		return
	}
	s.release(t)
}

// finishCancel moves the run to cancelled and returns the closing frames;
// the caller holds s.mu.
func (s *Simulator) finishCancel(t *turn) []sseEvent {
	r := t.run
	var out []sseEvent
	r.obj.Status = "cancelling"
	if b, err := jsonw.Marshal(r.obj); err == nil {
		out = append(out, sseEvent{"thread.run.cancelling", b})
	}
	cancelRun(&r.obj, s.now())
	r.pending, r.toolStep = nil, nil
	if b, err := jsonw.Marshal(r.obj); err == nil {
		out = append(out, sseEvent{"thread.run.cancelled", b})
	}
	s.release(t)
	return append(out, doneFrame())
}

// release marks the turn delivered; the caller holds s.mu.
func (s *Simulator) release(t *turn) {
	if t.run.active == t {
		t.run.active = nil
	}
}

func doneFrame() sseEvent { return sseEvent{foundrywire.DoneEvent, []byte(foundrywire.DoneData)} }

func writeAll(w io.Writer, rc *http.ResponseController, events []sseEvent) {
	for _, e := range events {
		if writeEvent(w, rc, e) != nil {
			return // the client is gone; the run's state is already final
		}
	}
}

func writeEvent(w io.Writer, rc *http.ResponseController, e sseEvent) error {
	buf := foundrywire.AppendFrame(make([]byte, 0, len(e.name)+len(e.data)+16), e.name, e.data)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write event %s: %w", e.name, err)
	}
	return flush(rc)
}

func flush(rc *http.ResponseController) error {
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}
