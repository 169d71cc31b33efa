package drain_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/drain"
)

// A streaming server that writes its end marker, flushes, and ends the
// body a moment later (as a real one may: the end of the chunked body, or
// of the HTTP/2 stream, in a packet of its own).
func streamServer(t *testing.T, tail time.Duration) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: thread.run.completed\ndata: {}\n\nevent: done\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-time.After(tail):
		case <-r.Context().Done():
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// readToDone reads the stream up to its end marker, as a decoder does,
// then closes the body, marking the end first when mark is set.
func readToDone(t *testing.T, c *http.Client, url string, mark bool) {
	t.Helper()
	ctx, end := drain.WithMark(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before done: %v", err)
		}
		if strings.HasPrefix(line, "data: [DONE]") {
			break
		}
	}
	if mark {
		end.End()
	}
	start := time.Now()
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("Close waited %s for the body's end", d)
	}
}

func TestStreamsReadToTheirEndReuseTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mark      bool
		wantConns int64
	}{
		{"marked: the rest is read in the background, the connection reused", true, 1},
		{"unmarked: closed early, a connection per call", false, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, conns := streamServer(t, 20*time.Millisecond)
			c := &http.Client{Transport: drain.Transport(srv.Client().Transport)}
			for range 5 {
				readToDone(t, c, srv.URL, tc.mark)
				time.Sleep(50 * time.Millisecond) // the tail arrives, the connection returns
			}
			if got := conns.Load(); got != tc.wantConns {
				t.Errorf("5 streams over %d connections, want %d", got, tc.wantConns)
			}
		})
	}
}

// A body that never ends after its marker delays nothing; the read in the
// background ends Wait after the request's context does.
func TestABodyThatNeverEndsIsLeftToItsContext(t *testing.T) {
	srv, _ := streamServer(t, time.Hour)
	c := &http.Client{Transport: drain.Transport(srv.Client().Transport)}
	ctx, cancel := context.WithCancel(context.Background())
	ctx, end := drain.WithMark(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(io.LimitReader(resp.Body, int64(len("event: thread.run.completed\ndata: {}\n\nevent: done\ndata: [DONE]\n\n")))); err != nil {
		t.Fatal(err)
	}
	end.End()
	start := time.Now()
	resp.Body.Close()
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("Close waited %s", d)
	}
	cancel()
	// srv.Close, at cleanup, waits for the handler, which ends when the
	// connection does.
}

// A capture that ends right after reading the end marker does not cut
// off the rest of the body: the connection is reused.
func TestTheRestArrivesAfterTheCaptureEnded(t *testing.T) {
	srv, conns := streamServer(t, 20*time.Millisecond)
	c := &http.Client{Transport: drain.Transport(srv.Client().Transport)}
	for range 3 {
		// The next stream starts once the connection is back in the
		// pool, however long the rest takes on a busy machine.
		idle := make(chan error, 1)
		ctx, cancel := context.WithCancel(httptrace.WithClientTrace(context.Background(),
			&httptrace.ClientTrace{PutIdleConn: func(err error) { idle <- err }}))
		ctx, end := drain.WithMark(ctx)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(io.LimitReader(resp.Body, int64(len("event: thread.run.completed\ndata: {}\n\nevent: done\ndata: [DONE]\n\n"))))
		end.End()
		resp.Body.Close()
		cancel()
		select {
		case err := <-idle:
			if err != nil {
				t.Fatalf("the connection was not kept: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the connection never went back to the pool")
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("3 streams over %d connections, want 1", got)
	}
}

// A stream abandoned before its end marker is closed, and its request
// cancelled, when the context is: as without drain.
func TestAnAbandonedStreamEndsWithItsContext(t *testing.T) {
	srv, conns := streamServer(t, time.Hour)
	c := &http.Client{Transport: drain.Transport(srv.Client().Transport)}
	ctx, cancel := context.WithCancel(context.Background())
	ctx, _ = drain.WithMark(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); read <- err }()
	cancel()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("the read ended without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the context did not end the read")
	}
	resp.Body.Close()
	if conns.Load() != 1 {
		t.Fatal(conns.Load())
	}
}
