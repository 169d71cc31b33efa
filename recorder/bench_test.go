package recorder_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/foundry"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/sqlite"
)

const benchKey = "bench-api-key-0123456789"

// benchServer is the capture server as `serve` wires it, against the
// simulator on loopback, with live recording on or off. Each recording
// written is signalled on saved.
func benchServer(b *testing.B, record bool, chunkDelay time.Duration) (hs *httptest.Server, saved <-chan struct{}) {
	b.Helper()
	sim := httptest.NewServer(simulator.New(simulator.Config{ChunkDelay: chunkDelay}))
	b.Cleanup(sim.Close)
	var tap = func(next http.RoundTripper) http.RoundTripper { return next }
	var obs brainwire.Observer = brainwire.Observers(nil)
	done := make(chan struct{}, 1024)
	if record {
		dir := recorder.DirSink{Dir: b.TempDir()}
		sink := recorder.SinkFunc(func(ctx context.Context, fx *recorder.Fixture) error {
			err := dir.Save(ctx, fx)
			done <- struct{}{}
			return err
		})
		rec, err := recorder.New(recorder.Config{Sink: sink, Sample: 1, QueueSize: 1024})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rec.Close(context.Background()) })
		tap, obs = rec.Transport, rec
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	hc := &http.Client{Transport: foundry.NewStaticTokenTransport("bench-token", tap(base))}
	client, err := foundry.NewClient(sim.URL+simulator.ProjectPath, hc)
	if err != nil {
		b.Fatal(err)
	}
	store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	p, err := foundry.NewProvider(client, simulator.DefaultAgentID)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Keys: server.Keys{benchKey: "bench"}, Provider: p,
		Store: store, Observer: obs,
	})
	if err != nil {
		b.Fatal(err)
	}
	hs = httptest.NewServer(srv.Handler())
	b.Cleanup(hs.Close)
	return hs, done
}

// timeCapture posts one capture and returns the time to the first byte of
// the answer and the time to the outcome event.
func timeCapture(b *testing.B, hs *httptest.Server, text string) (ttfb, tto time.Duration) {
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/api/capture", strings.NewReader(`{"text":"`+text+`"}`))
	req.Header.Set("Authorization", "Bearer "+benchKey)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := hs.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := r.Peek(1); err != nil {
		b.Fatal(err)
	}
	ttfb = time.Since(start)
	for {
		line, err := r.ReadString('\n')
		if tto == 0 && (strings.Contains(line, `"CLASSIFIED"`) || strings.Contains(line, `"LOW_CONFIDENCE"`)) {
			tto = time.Since(start)
		}
		if err != nil {
			break
		}
	}
	if tto == 0 {
		b.Fatal("no outcome")
	}
	return ttfb, tto
}

// BenchmarkLiveRecording measures a capture's time to first byte and time
// to outcome with live recording off and on. Two servers run side by side,
// one recording and one not, and each iteration makes one capture on each
// (in alternating order), so that both see the same machine.
//
//   - idle: the simulator does not pause between chunks, so any cost of
//     recording on the read path would show; after each capture the
//     benchmark waits until its recording is written, as when captures
//     are seconds apart.
//
//   - back-to-back: the same, without waiting: the writer (encoding and
//     fsync of a fixture) competes for the CPU with the next capture.
//
//   - paced: the simulator pauses 2 ms before each chunk, like a model
//     streaming its reasoning.
//
//     go test -run '^$' -bench LiveRecording -benchtime 300x ./recorder/
func BenchmarkLiveRecording(b *testing.B) {
	runs := []struct {
		name, text string
		delay      time.Duration
		wait       bool
	}{
		{"idle/short", "Call mom about her birthday on Sunday", -1, true},
		{"idle/1000-chunks", "Plan the product launch #long:1000", -1, true},
		{"back-to-back/short", "Call mom about her birthday on Sunday", -1, false},
		{"back-to-back/1000-chunks", "Plan the product launch #long:1000", -1, false},
		{"paced/short", "Call mom about her birthday on Sunday", 2 * time.Millisecond, true},
	}
	for _, run := range runs {
		b.Run(run.name, func(b *testing.B) {
			off, _ := benchServer(b, false, run.delay)
			on, saved := benchServer(b, true, run.delay)
			wait := func() {
				if !run.wait {
					return
				}
				select {
				case <-saved:
				case <-time.After(10 * time.Second):
					b.Fatal("the recording was not written")
				}
			}
			timeCapture(b, off, run.text) // warm up connections
			timeCapture(b, on, run.text)
			wait()
			var ttfb, tto [2][]time.Duration // [off, on]
			i := 0
			for b.Loop() {
				for k := range 2 {
					if (i+k)%2 == 0 {
						a, o := timeCapture(b, off, run.text)
						ttfb[0], tto[0] = append(ttfb[0], a), append(tto[0], o)
					} else {
						a, o := timeCapture(b, on, run.text)
						ttfb[1], tto[1] = append(ttfb[1], a), append(tto[1], o)
						wait()
					}
				}
				i++
			}
			report(b, "off-ttfb", ttfb[0])
			report(b, "on-ttfb", ttfb[1])
			report(b, "off-tto", tto[0])
			report(b, "on-tto", tto[1])
		})
	}
}

func report(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	q := func(p float64) float64 {
		return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), name+"-p50-ms")
	b.ReportMetric(q(0.9), name+"-p90-ms")
}
