package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/brainwire/brainwire/internal/process"
	"github.com/brainwire/brainwire/simulator"
)

// Process is a program Launch started, listening on Addr.
type Process struct {
	*process.Proc
	Addr string // host:port
	// Stdout is where its standard output went, when apart from Log.
	Stdout string
}

// startProcess runs argv with exactly env (nothing inherited), its
// output in files under dir.
func startProcess(name string, argv, env []string, dir string, separateStdout bool) (*Process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	p := &Process{}
	if separateStdout {
		p.Stdout = filepath.Join(dir, name+".out")
		f, err := os.Create(p.Stdout)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the process has its own
		cmd.Stdout = f
	}
	var err error
	p.Proc, err = process.Start(name, cmd, filepath.Join(dir, name+".log"))
	return p, err
}

// FreeAddr is a loopback address with a port nothing listens on now.
func FreeAddr() (string, error) { return process.FreeAddr() }

// Faces of the simulator the server can run captures on.
const (
	FaceResponses = "responses" // the Responses API (the server's default)
	FaceThreads   = "threads"   // the classic threads/runs API
	FaceADK       = "adk"       // an ADK API server
)

// StackConfig says what Launch starts.
type StackConfig struct {
	// Brainwire is the brainwire binary; Self is this program, which runs
	// the OTLP sink (SinkCommand) and the floor server (FloorCommand) in
	// processes of their own. SimBrainwire, when set, runs the simulator
	// instead (to measure an older server against the same simulator).
	Brainwire, Self, SimBrainwire string
	// Floor starts the floor server (package bench/floor) in place of
	// brainwire serve: Go's HTTP server and serve's upstream transport
	// making the same calls to the same simulator and face, with none of
	// brainwire's logic, to measure what the traffic alone costs. It has
	// no telemetry; of ServerEnv it takes BRAINWIRE_UPSTREAM_H2C and
	// BRAINWIRE_PPROF_ADDR as serve reads them, and the rest (GODEBUG,
	// GOMAXPROCS, ...) as its environment.
	Floor bool
	// Dir holds the processes' logs and the server's data.
	Dir string
	// Face is the simulator face the server uses (FaceResponses when
	// empty); ChunkDelay the simulator's pause before each chunk.
	Face       string
	ChunkDelay time.Duration
	// Telemetry sends the server's traces and metrics over OTLP to the
	// sink; without it the server has no telemetry.
	Telemetry bool
	// ServerEnv is added to the server's environment ("NAME=value").
	ServerEnv []string
}

// ImageGODEBUG is the GODEBUG the container image (Dockerfile) runs the
// server with; the load runs it so too, unless ServerEnv says otherwise.
const ImageGODEBUG = "adaptivestackstart=0"

// SinkCommand is the argument that makes Self run the OTLP sink.
const SinkCommand = "otlp-sink"

// FloorCommand is the argument that makes Self run the floor server.
const FloorCommand = "floor"

// simToken is the bearer token the server sends the simulator, which
// takes any.
const simToken = "load"

// Stack is a server with its simulator and, with telemetry, an OTLP sink.
type Stack struct {
	Server, Sim, Sink *Process
	Key               string
	// StatsURL is the simulator's connection counts; "" when it has none.
	StatsURL string
}

// Launch starts the simulator, the sink (with telemetry) and the server
// (or the floor server), and waits until the server's /health answers 200.
func Launch(ctx context.Context, cfg StackConfig) (_ *Stack, err error) {
	if cfg.Floor {
		switch {
		case cfg.Telemetry:
			return nil, errors.New("load: the floor server has no telemetry: leave out -telemetry with -floor")
		case cfg.Face == FaceADK:
			return nil, fmt.Errorf("load: the floor server speaks the %s and %s faces, not %s", FaceResponses, FaceThreads, FaceADK)
		case cfg.Self == "":
			return nil, errors.New("load: the floor server runs in Self, which is not set")
		}
	}
	st := &Stack{Key: "load-test-key-0123456789"}
	defer func() {
		if err != nil {
			_, _ = st.Stop()
		}
	}()
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}

	simAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	simBin := cfg.Brainwire
	if cfg.SimBrainwire != "" {
		simBin = cfg.SimBrainwire
	}
	// Every capture in flight keeps its conversation: -max-threads.
	simArgs := []string{simBin, "sim", "-addr", simAddr, "-chunk-delay", cfg.ChunkDelay.String(), "-max-threads", "100000"}
	if st.Sim, err = startProcess("simulator", simArgs, base, cfg.Dir, false); err != nil {
		return nil, err
	}
	st.Sim.Addr = simAddr
	if err := st.Sim.WaitReady(ctx, 30*time.Second, process.Listening(simAddr)); err != nil {
		return nil, err
	}
	simURL := "http://" + simAddr
	if process.Healthy(simURL+simulator.StatsPath)(ctx) == nil {
		st.StatsURL = simURL + simulator.StatsPath
	}

	env := append(base[:len(base):len(base)], "BRAINWIRE_API_KEYS="+st.Key+":load", "BRAINWIRE_DATA_DIR="+filepath.Join(cfg.Dir, "data"),
		"GODEBUG="+ImageGODEBUG)
	switch cfg.Face {
	case "", FaceResponses:
		env = append(env, "AZURE_AI_PROJECT_ENDPOINT="+simURL+simulator.ProjectPath, "AZURE_AI_PROJECT_TOKEN="+simToken,
			"AZURE_AI_MODEL_DEPLOYMENT_NAME="+simulator.DefaultModel)
	case FaceThreads:
		env = append(env, "AZURE_AI_PROJECT_ENDPOINT="+simURL+simulator.ProjectPath, "AZURE_AI_PROJECT_TOKEN="+simToken,
			"AZURE_AI_AGENT_ID="+simulator.DefaultAgentID)
	case FaceADK:
		env = append(env, "ADK_API_BASE_URL="+simURL, "ADK_APP_NAME="+simulator.DefaultADKApp)
	default:
		return nil, fmt.Errorf("load: %q is not a face (%s, %s or %s)", cfg.Face, FaceResponses, FaceThreads, FaceADK)
	}
	if cfg.Telemetry {
		sinkAddr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		argv := []string{cfg.Self, SinkCommand, "-addr", sinkAddr}
		if st.Sink, err = startProcess("otlp-sink", argv, base, cfg.Dir, true); err != nil {
			return nil, err
		}
		st.Sink.Addr = sinkAddr
		if err := st.Sink.WaitReady(ctx, 30*time.Second, process.Listening(sinkAddr)); err != nil {
			return nil, err
		}
		env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+sinkAddr)
	}
	env = append(env, cfg.ServerEnv...)

	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	if cfg.Floor {
		argv, err := floorArgs(cfg, addr, simURL, st.Key)
		if err != nil {
			return nil, err
		}
		env := append(append(base[:len(base):len(base)], "GODEBUG="+ImageGODEBUG), cfg.ServerEnv...)
		if st.Server, err = startProcess("floor", argv, env, cfg.Dir, false); err != nil {
			return nil, err
		}
	} else {
		env = append(env, "BRAINWIRE_ADDR="+addr)
		if st.Server, err = startProcess("server", []string{cfg.Brainwire, "serve"}, env, cfg.Dir, false); err != nil {
			return nil, err
		}
	}
	st.Server.Addr = addr
	if err := st.Server.WaitReady(ctx, 60*time.Second, process.Healthy("http://"+addr+"/health")); err != nil {
		return nil, err
	}
	return st, nil
}

// floorArgs is the command line of the floor server listening on addr,
// with the upstream transport and profiles that ServerEnv asks serve for.
func floorArgs(cfg StackConfig, addr, simURL, key string) ([]string, error) {
	face := cfg.Face
	if face == "" {
		face = FaceResponses
	}
	argv := []string{cfg.Self, FloorCommand, "-addr", addr, "-upstream", simURL, "-face", face, "-key", key, "-token", simToken}
	if v, ok := lastEnv(cfg.ServerEnv, "BRAINWIRE_UPSTREAM_H2C"); ok {
		h2c, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("load: BRAINWIRE_UPSTREAM_H2C: %q is not true or false", v)
		}
		argv = append(argv, "-h2c="+strconv.FormatBool(h2c))
	}
	if v, ok := lastEnv(cfg.ServerEnv, "BRAINWIRE_PPROF_ADDR"); ok && v != "" {
		argv = append(argv, "-pprof-addr", v)
	}
	return argv, nil
}

// lastEnv is the value of name in env: its last entry, the one a
// process started with env sees (exec.Cmd keeps the last of duplicates).
func lastEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// Stop stops the server (which flushes its telemetry), then the sink and
// the simulator, and returns what the sink received.
func (st *Stack) Stop() (*SinkStats, error) {
	var errs []error
	for _, p := range []*Process{st.Server, st.Sink, st.Sim} {
		if p != nil {
			if err := p.Stop(90 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	var stats *SinkStats
	if st.Sink != nil && st.Sink.Stdout != "" {
		s, err := readSinkStats(st.Sink.Stdout)
		if err != nil {
			errs = append(errs, err)
		}
		stats = s
	}
	return stats, errors.Join(errs...)
}

// readSinkStats reads the last JSON line the sink printed.
func readSinkStats(path string) (*SinkStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "{") {
			last = line
		}
	}
	if last == "" {
		return nil, fmt.Errorf("the OTLP sink printed no stats (%s)", path)
	}
	var s SinkStats
	if err := json.Unmarshal([]byte(last), &s); err != nil {
		return nil, fmt.Errorf("the OTLP sink's stats: %w", err)
	}
	return &s, nil
}
