package load_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/bench/floor"
	"github.com/brainwire/brainwire/bench/load"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/internal/agenthttp"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/telemetry"
	"github.com/brainwire/brainwire/wiring"
)

const key = "load-test-key-0123456789"

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRunMeasuresARealServer drives two rounds of captures against a
// server wired as serve wires it, with OTLP export to the sink, over h2c
// to the simulator on a real listener. The server runs in this process,
// which the run then measures as the server: the figures must be there
// and agree with what the phones, the simulator and the sink saw.
func TestRunMeasuresARealServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	sim := simulator.New(simulator.Config{ChunkDelay: time.Millisecond})
	simL := listen(t)
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Serve(ctx, simL) }()

	sink := load.NewSink()
	sinkL := listen(t)
	go sink.Serve(sinkL)
	defer sink.Stop()

	tel, err := telemetry.Start(ctx, telemetry.Settings{ServiceName: "brainwire", CaptureContent: true,
		Traces: &telemetry.Exporters{OTLP: "http://" + sinkL.Addr().String()}}, telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "brainwire.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var ids atomic.Int64
	srv, err := wiring.New(wiring.Config{
		Server: server.Config{
			Keys:      server.Keys{key: "load"},
			Store:     st,
			Blobs:     blobs,
			KeepAlive: -1,
			NewID:     func() string { return fmt.Sprintf("id-%d", ids.Add(1)) },
		},
		Agent: wiring.Foundry("http://"+simL.Addr().String()+simulator.ProjectPath, simulator.DefaultAgentID, "v1",
			func(rt http.RoundTripper) http.RoundTripper { return foundry.NewStaticTokenTransport("simulator", rt) }),
		Upstream:  agenthttp.Upstream{H2C: true},
		Telemetry: tel,
	})
	if err != nil {
		t.Fatal(err)
	}
	phones := httptest.NewServer(srv.Handler())
	defer phones.Close()

	const n, chunks = 30, 8
	var progress []int
	rep, err := load.Run(ctx, load.Config{
		Addr: strings.TrimPrefix(phones.URL, "http://"), Key: key,
		Text: fmt.Sprintf("Call mom about her birthday on Sunday #long:%d", chunks),
		N:    n, Rounds: 2, Ramp: 100 * time.Millisecond, Timeout: 30 * time.Second, Settle: -1,
		Server:        os.Getpid(),
		UpstreamStats: "http://" + simL.Addr().String() + simulator.StatsPath,
		Progress:      func(r load.Round) { progress = append(progress, r.Index) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rounds) != 2 || len(progress) != 2 || rep.ServerIdleRSS <= 0 || rep.ServerFDLimit == "" {
		t.Fatalf("report %+v, progress %v", rep, progress)
	}
	for _, r := range rep.Rounds {
		if r.ErrorCount() != 0 || r.Outcomes["CLASSIFIED"] != n || r.Complete.Count != n || r.FirstByte.Count != n {
			t.Fatalf("round %d: errors %v, outcomes %v, %d complete", r.Index, r.Errors, r.Outcomes, r.Complete.Count)
		}
		if q := r.Outcome; q.P50 <= 0 || q.P50 > q.P99 || q.P99 > q.Max || r.Complete.P50 < q.P50 {
			t.Errorf("round %d: outcome quantiles %+v, COMPLETE %+v", r.Index, q, r.Complete)
		}
		if !r.Server.Measured || r.Server.CPU <= 0 || r.Server.PeakRSS <= 0 || r.Server.PeakFDs <= 0 || r.PeakStreams < 1 || r.PeakStreams > n {
			t.Errorf("round %d: server %+v, peak streams %d", r.Index, r.Server, r.PeakStreams)
		}
		if r.UpstreamRequests < 2*n || r.UpstreamHTTP2 != r.UpstreamRequests || r.Dials != n {
			t.Errorf("round %d: upstream %d connections, %d requests (%d HTTP/2), %d dials", r.Index, r.UpstreamConns, r.UpstreamRequests, r.UpstreamHTTP2, r.Dials)
		}
		if q := r.UpstreamLate; q.Count < n*chunks || q.P50 <= 0 || q.P50 > q.P99 || q.P99 > q.Max {
			t.Errorf("round %d: upstream lateness %+v, want %d paced frames at least", r.Index, q, n*chunks)
		}
	}
	if c := rep.Rounds[1].UpstreamConns; c != 0 {
		t.Errorf("a warm round over h2c opened %d upstream connections", c)
	}
	var out strings.Builder
	rep.Print(&out)
	if !strings.Contains(out.String(), "round 2 (steady state)") || !strings.Contains(out.String(), "per capture") {
		t.Errorf("printed report:\n%s", out.String())
	}

	// Every capture's spans reach the sink, with every reasoning chunk
	// as an event, counted from the OTLP bytes.
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s := sink.Stats()
	t.Logf("sink %+v; %s", s, rep.Rounds[1].Row(rep.ServerIdleRSS))
	if s.Malformed != 0 || s.TraceRequests == 0 || s.Spans < 2*n || s.ChunksDeclared < 2*n*chunks || s.ChunkEvents != s.ChunksDeclared || s.DroppedEvents != 0 {
		t.Errorf("sink: %+v", s)
	}
	cancel()
	if err := <-simDone; err != nil {
		t.Error(err)
	}
}

// TestRunMeasuresTheFloor drives two rounds of captures against the
// floor server, in this process and over h2c to the simulator on a real
// listener, as -floor runs it: every capture is filed, over the calls
// serve would make, and the server's figures are there. The phones come
// each on a connection of its own, or as streams on a shared HTTP/2 one
// (-phones-h2c), which a warm round does not dial again.
func TestRunMeasuresTheFloor(t *testing.T) {
	for _, tc := range []struct {
		face      string
		calls     int64
		phonesH2C bool
	}{{load.FaceThreads, 2, false}, {load.FaceResponses, 3, false}, {load.FaceThreads, 2, true}} {
		face, calls := tc.face, tc.calls
		t.Run(fmt.Sprintf("%s/phones-h2c=%t", face, tc.phonesH2C), func(t *testing.T) {
			ctx := t.Context()
			sim := simulator.New(simulator.Config{ChunkDelay: time.Millisecond})
			simL := listen(t)
			simDone := make(chan error, 1)
			go func() { simDone <- sim.Serve(ctx, simL) }()
			t.Cleanup(func() {
				if err := <-simDone; err != nil { // t.Context ends before cleanups
					t.Error(err)
				}
			})
			tr := agenthttp.Upstream{H2C: true}.Transport()
			defer tr.CloseIdleConnections()
			h, err := floor.New(floor.Config{Upstream: "http://" + simL.Addr().String(), Face: face, Key: key, Token: "load",
				Client: &http.Client{Transport: tr}})
			if err != nil {
				t.Fatal(err)
			}
			phones := httptest.NewUnstartedServer(h)
			phones.Config.Protocols = new(http.Protocols)
			phones.Config.Protocols.SetHTTP1(true)
			phones.Config.Protocols.SetUnencryptedHTTP2(tc.phonesH2C)
			phones.Start()
			defer phones.Close()

			const n = 5
			rep, err := load.Run(ctx, load.Config{
				Addr: strings.TrimPrefix(phones.URL, "http://"), Key: key,
				Text: "Call mom about her birthday on Sunday #long:8",
				N:    n, Rounds: 2, Ramp: 20 * time.Millisecond, Timeout: 30 * time.Second, Settle: -1,
				Server:        os.Getpid(),
				UpstreamStats: "http://" + simL.Addr().String() + simulator.StatsPath,
				PhonesH2C:     tc.phonesH2C,
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Rounds {
				if r.ErrorCount() != 0 || r.Outcomes["CLASSIFIED"] != n || r.Complete.Count != n || r.FirstByte.Count != n {
					t.Fatalf("round %d: errors %v, outcomes %v, %d complete", r.Index, r.Errors, r.Outcomes, r.Complete.Count)
				}
				if !r.Server.Measured || r.Server.CPU <= 0 || r.Server.PeakRSS <= 0 {
					t.Errorf("round %d: server %+v", r.Index, r.Server)
				}
				if r.UpstreamRequests != calls*n || r.UpstreamHTTP2 != r.UpstreamRequests {
					t.Errorf("round %d: upstream: %d requests (%d HTTP/2), want %d", r.Index, r.UpstreamRequests, r.UpstreamHTTP2, calls*n)
				}
			}
			if d := rep.Rounds[1].Dials; tc.phonesH2C && d != 0 || !tc.phonesH2C && d != n {
				t.Errorf("the phones dialled %d connections in the warm round", d)
			}
		})
	}
}

// The floor server has no telemetry to measure, and no ADK face: Launch
// says so before it starts anything.
func TestLaunchRefusesWhatTheFloorCannotDo(t *testing.T) {
	for _, cfg := range []load.StackConfig{
		{Floor: true, Self: "/nonexistent", Telemetry: true},
		{Floor: true, Self: "/nonexistent", Face: load.FaceADK},
		{Floor: true},
	} {
		if _, err := load.Launch(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "floor") {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// TestKeyedCapturesAreEachTheirOwn runs keyed captures (-keyed) as
// phones that retry send them: each carries a key of its own, so that
// every capture of every round is filed, none replayed.
func TestKeyedCapturesAreEachTheirOwn(t *testing.T) {
	ctx := t.Context()
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: -1}))
	defer sim.Close()
	path := filepath.Join(t.TempDir(), "brainwire.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := wiring.New(wiring.Config{
		Server: server.Config{Keys: server.Keys{key: "load"}, Store: st, KeepAlive: -1},
		Agent: wiring.Foundry(sim.URL+simulator.ProjectPath, simulator.DefaultAgentID, "v1",
			func(rt http.RoundTripper) http.RoundTripper { return foundry.NewStaticTokenTransport("simulator", rt) }),
	})
	if err != nil {
		t.Fatal(err)
	}
	phones := httptest.NewUnstartedServer(srv.Handler())
	phones.Config.Protocols = new(http.Protocols)
	phones.Config.Protocols.SetHTTP1(true)
	phones.Config.Protocols.SetUnencryptedHTTP2(true)
	phones.Start()
	defer phones.Close()
	const n = 10
	for _, h2c := range []bool{false, true} {
		rep, err := load.Run(ctx, load.Config{Addr: strings.TrimPrefix(phones.URL, "http://"), Key: key, Keyed: true,
			N: n, Rounds: 2, Ramp: 10 * time.Millisecond, Timeout: 30 * time.Second, Settle: -1, PhonesH2C: h2c})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Rounds {
			if r.ErrorCount() != 0 || r.Outcomes["CLASSIFIED"] != n {
				t.Fatalf("h2c %v, round %d: errors %v, outcomes %v", h2c, r.Index, r.Errors, r.Outcomes)
			}
		}
	}
	page, err := st.ListInbox(ctx, "load", brainwire.ListOptions{Limit: brainwire.MaxPageSize})
	if err != nil || len(page.Items) != 4*n {
		t.Errorf("%d items filed (%v), want one per capture: %d", len(page.Items), err, 4*n)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keys int
	if err := db.QueryRow(`SELECT count(*) FROM idempotency_keys WHERE state = 'done'`).Scan(&keys); err != nil || keys != 4*n {
		t.Errorf("%d keys settled (%v), want one per capture: %d", keys, err, 4*n)
	}
}
