package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/brainwire/brainwire/internal/app"
	"github.com/brainwire/brainwire/simulator"
)

func serve(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	initDB := fs.Bool("init-db", false, "create the Cosmos DB database and containers when missing")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	return serveReady(ctx, getenv, stdout, log, *initDB, nil)
}

// serveReady serves until ctx ends; ready, if set, is told the address.
func serveReady(ctx context.Context, getenv func(string) string, stdout io.Writer, log *slog.Logger, initDB bool, ready func(net.Addr)) error {
	cfg, err := loadConfig(getenv)
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
	rec, err := setupRecording(ctx, getenv, log)
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
	b, err := openBackends(ctx, cfg, getenv, initDB, log)
	if err != nil {
		return err
	}
	defer b.close()
	srv, err := app.New(app.Config{
		Keys:          cfg.Keys,
		Agent:         b.agent,
		Upstream:      cfg.Upstream,
		Store:         b.store,
		Blobs:         b.blobs,
		Transcriber:   b.transcriber,
		Telemetry:     tel.tel,
		Recorder:      rec.recorder,
		LogReasoning:  tel.logReasoning,
		Logger:        log,
		AgentName:     agentName,
		AgentRefresh:  cfg.AgentRefresh,
		RunTimeout:    cfg.RunTimeout,
		MaxUploads:    cfg.MaxUploads,
		UploadTimeout: cfg.UploadTimeout,
		H2C:           cfg.H2C,
	})
	if err != nil {
		return err
	}
	return srv.ListenAndServe(ctx, cfg.Addr, func(addr net.Addr) {
		log.Info("brainwire is listening", "addr", addr.String())
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

func sim(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	addr := fs.String("addr", envOr(getenv, "BRAINWIRE_SIM_ADDR", "127.0.0.1:8100"), "listen address")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	delay, err := envDuration(getenv, "BRAINWIRE_SIM_CHUNK_DELAY", 0)
	if err != nil {
		return err
	}
	// How many conversations (threads, sessions) it keeps: a load test
	// with more captures in flight than the default needs more.
	maxThreads, err := envInt(getenv, "BRAINWIRE_SIM_MAX_THREADS", simulator.DefaultMaxThreads)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", *addr, err)
	}
	printSimulatorEnv(stdout, "http://"+l.Addr().String())
	log.Info("simulator listening", "addr", l.Addr().String())
	return simulator.New(simulator.Config{ChunkDelay: delay, MaxThreads: maxThreads}).Serve(ctx, l)
}

// printSimulatorEnv prints the variables that point serve at a simulator
// listening at base, for each way of naming the agent.
func printSimulatorEnv(w io.Writer, base string) {
	project := base + simulator.ProjectPath
	fmt.Fprintf(w, "Foundry Agent Service simulator (a keyword classifier, not an LLM)\n\n"+
		"Responses API, an agent brainwire defines (serve's default):\n"+
		"  AZURE_AI_PROJECT_ENDPOINT=%s\n  AZURE_AI_MODEL_DEPLOYMENT_NAME=%s\n  AZURE_AI_PROJECT_TOKEN=<any value>\n\n"+
		"Responses API, a Foundry agent by name: instead of the model,\n"+
		"  AZURE_AI_AGENT_NAME=%s\n  AZURE_AI_AGENT_VERSION=%s\n\n"+
		"Any OpenAI-compatible Responses API client:\n"+
		"  OPENAI_BASE_URL=%s/v1\n  OPENAI_API_KEY=<any value>\n  OPENAI_MODEL=%s\n\n"+
		"Classic Agents API (threads/runs, retires %s): instead of the model,\n"+
		"  AZURE_AI_AGENT_ID=%s\n\n"+
		"The same classifier as a Google ADK API server, instead of all of the above:\n"+
		"  ADK_API_BASE_URL=%s\n  ADK_APP_NAME=%s\n",
		project, simulator.DefaultModel, simulator.DefaultAgentName, simulator.DefaultAgentVersion,
		base, simulator.DefaultModel, classicRetirement, simulator.DefaultAgentID, base, simulator.DefaultADKApp)
}
