package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/internal/logbuf"
	"github.com/brainwire/brainwire/internal/retry"
	"github.com/brainwire/brainwire/shadow"
	"github.com/brainwire/brainwire/simulator"
	"github.com/brainwire/brainwire/wiring"
)

const serveAbout = `
Runs the capture server on BRAINWIRE_ADDR (127.0.0.1:8000). With no agent
service configured, captures go to a built-in keyword simulator (not a model),
which the -sim-* flags set; with no store configured, to SQLite under
BRAINWIRE_DATA_DIR (./data). Without BRAINWIRE_API_KEYS it generates a key.`

// serveFlags are serve's flags.
type serveFlags struct {
	initDB bool
	// sim sets the built-in simulator; simSet names the -sim-* flags
	// given, refused when an agent service is configured.
	sim    simFlags
	simSet []string
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, err := parseServe(args, stdout, stderr)
	if err != nil {
		return err
	}
	// A server logs a line per reasoning chunk: batched, not a write each
	// (logbuf), and all written out before serve returns.
	lb := logbuf.New(stderr, 0, 0)
	defer lb.Close()
	log, err := newLogger(getenv, lb, slog.LevelInfo)
	if err != nil {
		return err
	}
	return serveReady(ctx, getenv, f, stdout, log, nil)
}

func parseServe(args []string, stdout, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	cmd := newCommand("serve", "serve [flags]", serveAbout, envServe)
	cmd.BoolVar(&f.initDB, "init-db", false, "create the Cosmos DB database and containers when missing, and the Inbox's composite index")
	cmd.StringVar(&f.sim.face, "sim-api", simResponses, "the built-in simulator's face: responses (an agent brainwire defines), agent (the simulated Foundry agent by name), threads (the classic threads/runs API) or adk (an ADK API server)")
	f.sim.register(cmd.FlagSet, "sim-", simulator.DefaultChunkDelay)
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return f, err
	}
	if err := cmd.noArgs(stderr); err != nil {
		return f, err
	}
	cmd.Visit(func(fl *flag.Flag) {
		if strings.HasPrefix(fl.Name, "sim-") {
			f.simSet = append(f.simSet, "-"+fl.Name)
		}
	})
	return f, nil
}

// serveReady serves until ctx ends; ready, if set, is told the address.
func serveReady(ctx context.Context, getenv func(string) string, f serveFlags, stdout io.Writer, log *slog.Logger, ready func(net.Addr)) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	// Deferred first, so it is said last, once everything has closed.
	listened := false
	defer func() {
		if listened {
			log.Info("brainwire stopped")
		}
	}()
	if cfg.Agent.Sim == "" && len(f.simSet) > 0 {
		return usageError{fmt.Sprintf("serve: %s set the built-in simulator, and an agent service is configured", strings.Join(f.simSet, ", "))}
	}
	if cfg.Agent.Sim != "" {
		if err := cfg.Agent.useSimulator(f.sim.face); err != nil {
			return usageError{"serve: -sim-api: " + err.Error()}
		}
		if cfg.Sim, err = f.sim.config(); err != nil {
			return err
		}
	}
	shadowCfg, err := loadShadowSettings(getenv, cfg.Agent, cfg.Server.RunTimeout)
	if err != nil {
		return err
	}
	if addr := getenv("BRAINWIRE_PPROF_ADDR"); addr != "" {
		stop, err := servePprof(ctx, addr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	rec, err := setupRecording(ctx, cfg, getenv, log)
	if err != nil {
		return err
	}
	defer rec.close()
	tel, err := setupTelemetry(ctx, cfg, getenv, stdout, log)
	if err != nil {
		return err
	}
	// Deferred first, so it runs last: after the server has let running
	// captures finish and the backends are closed.
	defer tel.shutdown()
	b, err := openBackends(ctx, cfg, getenv, f.initDB, tel.upstream, log)
	if err != nil {
		return err
	}
	defer b.close()
	// The agent's connections close before the backends do: a simulator
	// stopping waits for its clients' connections to go.
	transport := cfg.Upstream.Transport()
	defer transport.CloseIdleConnections()
	// The server's settings come from the environment, its parts from the
	// backends.
	cfg.Server.Store, cfg.Server.Blobs, cfg.Server.Transcriber = b.store, b.blobs, b.transcriber
	if (b.blobs == nil || b.transcriber == nil) && tel.tel != nil {
		tel.tel.DeclareNoVoice() // voice captures are refused here
	}
	cfg.Server.Logger, cfg.Server.AgentName = log, agentName
	cfg.Server.Simulator = cfg.Agent.Sim != ""
	if shadowCfg != nil {
		st, ok := b.store.(shadow.Store)
		if !ok {
			return fmt.Errorf("%s: this store keeps no shadow trials", envShadowInstructions)
		}
		shadowCfg.Store, shadowCfg.Logger = st, log
		runner := shadow.New(*shadowCfg)
		// Shadows are dropped as soon as the server drains, not once the
		// captures it lets finish are done; all have ended before the
		// agent's connections and the store close.
		defer context.AfterFunc(ctx, runner.Drain)()
		defer runner.Drain()
		cfg.Server.Shadow = runner
		if tel.tel != nil {
			tel.tel.DeclareShadow(brainwire.ContentVersion(shadowCfg.Instructions))
		}
		log.Info("shadow trial on", "candidate_version", brainwire.ContentVersion(shadowCfg.Instructions), "sample", shadowCfg.Sample,
			"concurrency", shadowCfg.Concurrency, "timeout", shadowCfg.Timeout)
	}
	srv, err := wiring.New(wiring.Config{
		Server:       cfg.Server,
		Agent:        b.agent,
		Transport:    transport,
		Retry:        retry.Policy{Retries: cfg.Retries},
		Telemetry:    tel.tel,
		Recorder:     rec.recorder,
		LogReasoning: tel.logReasoning,
	})
	if err != nil {
		return err
	}
	return srv.ListenAndServe(ctx, cfg.Addr, func(addr net.Addr) {
		listened = true
		log.Info("brainwire is listening", "addr", addr.String())
		if cfg.Agent.Sim != "" {
			fmt.Fprintf(stdout, "\nNo agent service configured: %s.\ndocs/configuration.md (The agent) says how to set one.\n", simulatorBanner)
		}
		if cfg.GeneratedKey != "" {
			fmt.Fprintf(stdout, "\nNo BRAINWIRE_API_KEYS set: generated an API key for this run:\n\n  %s\n\n"+
				"Try a capture:\n\n  curl -N http://%s/api/capture -H 'Authorization: Bearer %s' "+
				"-H 'Content-Type: application/json' -d '{\"text\":\"Call mom about her birthday on Sunday\"}'\n\n",
				cfg.GeneratedKey, addr, cfg.GeneratedKey)
		}
		if ready != nil {
			ready(addr)
		}
	})
}

const simAbout = `
Runs the offline simulator on its own, every face at once (the Responses and
threads/runs APIs of a Foundry project, an ADK API server): a keyword
classifier, not a model. It prints the variables that point serve at it.`

func sim(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var f simFlags
	cmd := newCommand("sim", "sim [flags]", simAbout, "")
	addr := cmd.String("addr", "127.0.0.1:8100", "listen address")
	maxThreads := cmd.Int("max-threads", simulator.DefaultMaxThreads, "conversations (threads, ADK sessions) kept, the least recently used going first: a load with more captures in flight needs more")
	f.register(cmd.FlagSet, "", simulator.DefaultChunkDelay)
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if err := cmd.noArgs(stderr); err != nil {
		return err
	}
	if *maxThreads < 1 {
		return cmd.fail(stderr, "-max-threads must be 1 or more")
	}
	log, err := newLogger(getenv, stderr, slog.LevelInfo)
	if err != nil {
		return err
	}
	sc, err := f.config()
	if err != nil {
		return err
	}
	sc.MaxThreads = *maxThreads
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", *addr, err)
	}
	printSimulatorEnv(stdout, "http://"+l.Addr().String())
	log.Info("simulator listening", "addr", l.Addr().String())
	return simulator.New(sc).Serve(ctx, l)
}

// simFlags are the flags of a simulator a command runs: its face, its
// pace, and the instructions of the agent it simulates.
type simFlags struct {
	face         string
	chunkDelay   time.Duration
	instructions string
}

// register adds the pace and instructions flags, their names after
// prefix.
func (f *simFlags) register(fs *flag.FlagSet, prefix string, delay time.Duration) {
	fs.DurationVar(&f.chunkDelay, prefix+"chunk-delay", delay, "the simulator's pause between reasoning chunks (0: none)")
	fs.StringVar(&f.instructions, prefix+"instructions", "", "the `file` of instructions of the simulated agent that owns its own (the agent and threads faces), to try a deployed version offline; cue lines steer it (simulator/doc.go). An agent brainwire defines takes BRAINWIRE_INSTRUCTIONS instead")
}

// config is the simulator's configuration the flags give.
func (f simFlags) config() (simulator.Config, error) {
	c := simulator.Config{ChunkDelay: simDelay(f.chunkDelay)}
	if f.chunkDelay < 0 {
		return c, usageError{"the simulator's chunk delay must not be negative"}
	}
	if f.instructions != "" {
		b, err := os.ReadFile(f.instructions)
		if err != nil {
			return c, fmt.Errorf("the simulator's instructions: %w", err)
		}
		c.Instructions = string(b)
	}
	return c, nil
}

// simDelay is a chunk delay as simulator.Config has it: there, 0 means
// the default and a negative delay none.
func simDelay(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// printSimulatorEnv prints the variables that point serve at a simulator
// listening at base: each face's environment (simFaces), and an
// OpenAI-compatible client's.
func printSimulatorEnv(w io.Writer, base string) {
	fmt.Fprintln(w, "Foundry Agent Service and ADK API server simulator (a keyword classifier, not an LLM)")
	for _, f := range []struct{ face, title string }{
		{simResponses, "Responses API, an agent brainwire defines (serve's default)"},
		{simAgent, "Responses API, a Foundry agent by name"},
		{simThreads, "Classic Agents API (threads/runs, retires " + classicRetirement + ")"},
		{simADK, "The same classifier as a Google ADK API server"},
	} {
		fmt.Fprintf(w, "\n%s:\n", f.title)
		env := simFaces[f.face]
		for _, k := range slices.Sorted(maps.Keys(env)) {
			v := env[k]
			switch {
			case k == envProject:
				v = base + simulator.ProjectPath
			case v == simPending:
				v = base
			}
			fmt.Fprintf(w, "  %s=%s\n", k, v)
		}
	}
	fmt.Fprintf(w, "\nAny OpenAI-compatible Responses API client:\n  OPENAI_BASE_URL=%s/v1\n  OPENAI_API_KEY=<any value>\n  OPENAI_MODEL=%s\n",
		base, simulator.DefaultModel)
}
