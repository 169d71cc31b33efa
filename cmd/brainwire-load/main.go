// Command brainwire-load drives N concurrent captures against a brainwire
// server on loopback and reports latencies, errors, and the server's CPU,
// memory, descriptors and upstream connections (see package bench/load).
//
// By default it starts everything itself, each in a process of its own:
// the simulator (`brainwire sim`, paced), an OTLP receiver with -telemetry,
// and `brainwire serve` pointed at them:
//
//	go build -o /tmp/brainwire ./cmd/brainwire
//	go run ./cmd/brainwire-load -brainwire /tmp/brainwire -n 1000 -telemetry
//
// With -floor it starts the floor server (package bench/floor, run by this
// program: `brainwire-load floor`) in place of `brainwire serve`: Go's HTTP
// server and serve's upstream transport making the same calls to the same
// simulator, with none of brainwire's logic, so that what brainwire itself
// costs shows as the difference. Results and the commands that made them
// are in bench/RESULTS.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/brainwire/brainwire/bench/load"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == load.SinkCommand:
		err = sink(ctx, os.Args[2:], os.Stdout)
	case len(os.Args) > 1 && os.Args[1] == load.FloorCommand:
		err = serveFloor(ctx, os.Args[2:], os.Stderr)
	default:
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "brainwire-load:", err)
		os.Exit(1)
	}
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("brainwire-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg       load.Config
		stack     load.StackConfig
		serverEnv listFlag
	)
	fs.IntVar(&cfg.N, "n", 100, "captures per round, all in flight at once once the ramp is over")
	fs.IntVar(&cfg.Rounds, "rounds", 2, "rounds; the first warms the server up")
	fs.DurationVar(&cfg.Ramp, "ramp", time.Second, "a round's captures start evenly over this")
	fs.DurationVar(&cfg.Timeout, "timeout", load.DefaultTimeout, "per capture, from its start to COMPLETE")
	fs.DurationVar(&cfg.Settle, "settle", load.DefaultSettle, "wait after a round before reading its CPU (span export)")
	fs.StringVar(&cfg.Text, "text", load.DefaultText, "capture text (#long:50: 50 reasoning chunks before the tool call)")
	fs.BoolVar(&cfg.Keyed, "keyed", false, "send each capture with an Idempotency-Key of its own, as phones that retry do")
	fs.BoolVar(&cfg.PhonesH2C, "phones-h2c", false, "send the captures as streams on a few shared HTTP/2 connections without TLS, as an ingress speaking HTTP/2 to the replica does (the server is started with BRAINWIRE_H2C=true)")
	fs.StringVar(&stack.Brainwire, "brainwire", "", "the brainwire binary (built from ./cmd/brainwire when empty)")
	fs.StringVar(&stack.SimBrainwire, "sim-brainwire", "", "the brainwire binary that runs the simulator (-brainwire when empty)")
	fs.StringVar(&stack.Face, "face", load.FaceResponses, "the simulator face the server uses: responses, threads or adk")
	fs.DurationVar(&stack.ChunkDelay, "chunk-delay", 25*time.Millisecond, "the simulator's pause before each chunk")
	fs.BoolVar(&stack.Telemetry, "telemetry", false, "OTLP traces and metrics to a receiver in its own process")
	fs.BoolVar(&stack.Floor, "floor", false, "start the floor server (this program's floor command: the same traffic, none of brainwire's logic) instead of brainwire serve")
	fs.Var(&serverEnv, "server-env", "NAME=value for the server (repeatable)")
	dir := fs.String("dir", "", "directory for logs and the server's data (a new temporary one when empty; kept)")
	profile := fs.String("profile", "", "write CPU, heap and goroutine profiles of the server's last round to this directory, and report its heap and stacks per capture in flight")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	stack.ServerEnv = serverEnv
	if cfg.PhonesH2C {
		// First, so that a -server-env can still say otherwise.
		stack.ServerEnv = append([]string{"BRAINWIRE_H2C=true"}, stack.ServerEnv...)
	}

	var err error
	if *dir == "" {
		if *dir, err = os.MkdirTemp("", "brainwire-load-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	stack.Dir = *dir
	if stack.Self, err = os.Executable(); err != nil {
		return err
	}
	if stack.Brainwire == "" {
		if stack.Brainwire, err = build(ctx, *dir, stderr); err != nil {
			return err
		}
	}
	var pprofAddr string
	if *profile != "" {
		if pprofAddr, err = load.FreeAddr(); err != nil {
			return err
		}
		stack.ServerEnv = append(stack.ServerEnv, "BRAINWIRE_PPROF_ADDR="+pprofAddr)
	}
	fmt.Fprintf(stderr, "starting the simulator (%s face, %s per chunk), %sthe %s; logs in %s\n",
		stack.Face, stack.ChunkDelay, map[bool]string{true: "a telemetry receiver, ", false: ""}[stack.Telemetry],
		map[bool]string{true: "floor server", false: "server"}[stack.Floor], *dir)
	st, err := load.Launch(ctx, stack)
	if err != nil {
		return err
	}
	cfg.Addr, cfg.Key, cfg.Server, cfg.Upstream, cfg.UpstreamStats = st.Server.Addr, st.Key, st.Server.PID(), st.Sim.PID(), st.StatsURL
	if *profile != "" {
		cfg.During = profiler(*profile, pprofAddr, cfg, stderr)
	}
	cfg.Progress = func(r load.Round) {
		fmt.Fprintf(stderr, "round %d: %d captures, %d errors, outcome p99 %s\n", r.Index+1, r.N, r.ErrorCount(), r.Outcome.P99.Round(time.Millisecond))
	}
	rep, runErr := load.Run(ctx, cfg)
	sinkStats, err := st.Stop()
	runErr = errors.Join(runErr, err)
	if rep != nil {
		rep.Print(stdout)
		if sinkStats != nil {
			fmt.Fprintf(stdout, "\nOTLP receiver: %d trace exports (%.1f MiB), %d spans, %d events, %d reasoning.chunk events, "+
				"%d reasoning chunks declared by the spans, %d events dropped; %d metric exports\n",
				sinkStats.TraceRequests, float64(sinkStats.TraceBytes)/(1<<20), sinkStats.Spans, sinkStats.Events, sinkStats.ChunkEvents,
				sinkStats.ChunksDeclared, sinkStats.DroppedEvents, sinkStats.MetricRequests)
		}
		fmt.Fprintf(stdout, "\n%s\n", load.RowHeader)
		for _, r := range rep.Rounds {
			fmt.Fprintln(stdout, r.Row(rep.ServerIdleRSS))
		}
	}
	return runErr
}

// build builds brainwire from this module into dir.
func build(ctx context.Context, dir string, stderr io.Writer) (string, error) {
	out := filepath.Join(dir, "brainwire")
	fmt.Fprintf(stderr, "building %s\n", out)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/brainwire/brainwire/cmd/brainwire")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building brainwire (or pass -brainwire): %w", err)
	}
	return out, nil
}

// profiler takes the server's profiles during the last round: CPU over
// its first seconds, heap and goroutines when the most captures are in
// flight (90 % of N, or the end of the ramp).
func profiler(dir, addr string, cfg load.Config, stderr io.Writer) func(context.Context, int, func() int) {
	return func(ctx context.Context, round int, inFlight func() int) {
		if round != cfg.Rounds-1 {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(stderr, "profile:", err)
			return
		}
		base := "http://" + addr + "/debug/pprof/"
		done := make(chan struct{})
		go func() {
			defer close(done)
			fetch(ctx, base+"profile?seconds=5", filepath.Join(dir, "cpu.pprof"), stderr)
		}()
		rampEnd := time.Now().Add(cfg.Ramp)
		for inFlight() < cfg.N*9/10 && time.Now().Before(rampEnd) {
			time.Sleep(10 * time.Millisecond)
		}
		n := inFlight()
		fmt.Fprintf(stderr, "profile: heap and goroutines at %d captures in flight\n", n)
		fetch(ctx, base+"heap?gc=1", filepath.Join(dir, "heap.pprof"), stderr)
		fetch(ctx, base+"goroutine", filepath.Join(dir, "goroutine.pprof"), stderr)
		memstats := filepath.Join(dir, "memstats.txt")
		fetch(ctx, base+"heap?debug=1", memstats, stderr)
		if hs, err := readHeapStats(memstats); err != nil {
			fmt.Fprintln(stderr, "profile:", err)
		} else if n > 0 {
			fmt.Fprintf(stderr, "profile: after a forced GC, %.1f KiB of heap and %.1f KiB of stacks per capture in flight\n",
				float64(hs.HeapAlloc)/1024/float64(n), float64(hs.Stack)/1024/float64(n))
		}
		<-done
	}
}

func readHeapStats(path string) (load.HeapStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return load.HeapStats{}, err
	}
	defer f.Close()
	return load.ReadHeapStats(f)
}

func fetch(ctx context.Context, url, path string, stderr io.Writer) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = http.DefaultClient.Do(req); err == nil {
			defer resp.Body.Close()
			var f *os.File
			if f, err = os.Create(path); err == nil {
				_, err = io.Copy(f, resp.Body)
				err = errors.Join(err, f.Close())
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "profile %s: %v\n", url, err)
	}
}

// sink runs the OTLP receiver until ctx ends, then prints what it
// received as one JSON line.
func sink(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(load.SinkCommand, flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4317", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	s := load.NewSink()
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.Stop()
	return json.NewEncoder(stdout).Encode(s.Stats())
}
