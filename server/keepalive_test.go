package server

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// clockedWriter is a ResponseWriter that notes, by the bubble's clock,
// when each keep-alive comment was written.
type clockedWriter struct {
	mu         sync.Mutex
	header     http.Header
	keepAlives []time.Time
	writes     int
	fail       error // every write fails with it, when set
}

func (w *clockedWriter) Header() http.Header { return w.header }
func (w *clockedWriter) WriteHeader(int)     {}
func (w *clockedWriter) Flush()              {}

func (w *clockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	if w.fail != nil {
		return 0, w.fail
	}
	if strings.HasPrefix(string(p), ":") {
		w.keepAlives = append(w.keepAlives, time.Now())
	}
	return len(p), nil
}

func (w *clockedWriter) times() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.keepAlives...)
}

// No comment goes out while events flow more often than the interval,
// and once they stop one goes out exactly one interval after the last
// write, whenever that write was: a silence never lasts longer than the
// documented interval. The clock is the bubble's, so this runs at once.
func TestKeepAliveComesOneIntervalAfterTheLastWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 15 * time.Second
		w := &clockedWriter{header: http.Header{}}
		s := startStream(w, every)
		defer s.close()
		for range 10 {
			time.Sleep(every - time.Second)
			if err := s.write([]byte("data: {}\n\n")); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if got := w.times(); len(got) != 0 {
			t.Fatalf("keep-alive comments while events flowed every %v: %v", every-time.Second, got)
		}
		lastEvent := time.Now()
		time.Sleep(61 * time.Second)
		synctest.Wait()

		got := w.times()
		if len(got) != 4 {
			t.Fatalf("%d keep-alive comments in 61 s of silence, want 4: %v", len(got), got)
		}
		prev := lastEvent
		for i, at := range got {
			if gap := at.Sub(prev); gap != every {
				t.Errorf("keep-alive %d came %v after the previous write, want %v", i+1, gap, every)
			}
			prev = at
		}
	})
}

// Once the client is gone, the keep-alive stops trying: no busy loop on a
// dead connection.
func TestKeepAliveStopsWhenTheClientIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &clockedWriter{header: http.Header{}, fail: errors.New("connection reset by peer")}
		s := startStream(w, 15*time.Second)
		time.Sleep(time.Hour)
		synctest.Wait()
		s.close()
		if w.writes != 1 {
			t.Fatalf("%d writes to a gone client in an hour, want the one that failed", w.writes)
		}
	})
}
