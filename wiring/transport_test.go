package wiring_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/wiring"
)

// upstreamRounds runs rounds of n concurrent captures through wiring.New's
// wiring with upstream's transport against the simulator served on a
// real listener (HTTP/1.1 and h2c), and returns the simulator's traffic
// counts after each round.
func upstreamRounds(t *testing.T, upstream agenthttp.Upstream, rounds, n int) []simulator.Stats {
	t.Helper()
	sim := simulator.New(simulator.Config{ChunkDelay: 2 * time.Millisecond})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})

	st := openStore(t)
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	phone := serveWired(t, wiring.Config{
		Server: server.Config{Store: st, Blobs: blobs},
		Agent: wiring.Foundry("http://"+l.Addr().String()+simulator.ProjectPath, simulator.DefaultAgentID, "v1",
			func(rt http.RoundTripper) http.RoundTripper { return foundry.NewStaticTokenTransport("simulator", rt) }),
		Upstream: upstream,
	})

	var stats []simulator.Stats
	for range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				body := fmt.Sprintf(`{"text":"Call mom about her birthday on Sunday %d #long:5"}`, i)
				req, _ := http.NewRequest(http.MethodPost, phone.URL+"/api/capture", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+phoneKey)
				req.Header.Set("Content-Type", "application/json")
				resp, err := phone.Client().Do(req)
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if !bytes.Contains(b, []byte(`"type":"CLASSIFIED"`)) || !bytes.Contains(b, []byte(`"type":"COMPLETE"`)) {
					errs <- fmt.Errorf("capture %d: %d %s", i, resp.StatusCode, b)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		stats = append(stats, sim.Stats())
	}
	return stats
}

// Over h2c the captures in flight share the connections: once some are
// open, a round of captures as many as the connections were dialled for
// opens none, though each capture makes several calls, all streamed.
// (A cold burst may dial a connection per call before the first one is
// up; that is the transport's, once.)
func TestUpstreamH2CSharesConnections(t *testing.T) {
	const n = 40
	s := upstreamRounds(t, agenthttp.Upstream{H2C: true}, 3, n)
	if s[2].HTTP2Requests != s[2].Requests || s[2].Requests < 3*2*n {
		t.Fatalf("three rounds of %d captures over h2c: %+v; want every request over HTTP/2", n, s[2])
	}
	if s[2].Connections != s[0].Connections {
		t.Fatalf("connections after each round of %d captures over h2c: %d, %d, %d; want none after the first", n, s[0].Connections, s[1].Connections, s[2].Connections)
	}
	t.Logf("%d captures in flight, %d requests over %d connections", n, s[2].Requests, s[2].Connections)
}

// Over HTTP/1.1 a connection is held per call in flight; the pool keeps
// them, and streams read to their end give theirs back (drain), so once
// warm, a round of as many captures opens next to none (a call may start
// just before the one that ended has given its connection back).
// With the idle pool as small as Go's default per host (2), most calls
// dial again.
func TestUpstreamPoolKeepsAConnectionPerCaptureInFlight(t *testing.T) {
	const n = 40
	warm := func(s []simulator.Stats) int64 { return s[1].Connections - s[0].Connections }
	pooled := upstreamRounds(t, agenthttp.Upstream{}, 2, n)
	if pooled[1].HTTP2Requests != 0 {
		t.Fatalf("HTTP/2 to an http:// upstream without H2C: %+v", pooled[1])
	}
	if got := warm(pooled); got > n/10 {
		t.Errorf("a warm round of %d captures opened %d connections (%+v)", n, got, pooled)
	}
	small := upstreamRounds(t, agenthttp.Upstream{IdleConns: 2}, 2, n)
	if got := warm(small); got < n/2 {
		t.Errorf("with 2 idle connections a warm round of %d captures opened only %d: the test does not tell pooling apart", n, got)
	}
	t.Logf("connections opened by a warm round of %d captures: %d pooled, %d with 2 idle", n, warm(pooled), warm(small))
}
