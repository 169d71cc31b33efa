// Command brainwire is the capture backend's one binary.
//
//	brainwire serve    run the capture server
//	brainwire sim      run the offline simulator (Foundry and ADK faces) on its own
//	brainwire record   record one capture into a fixture and its golden files
//	brainwire replay   replay fixtures: print the phone's SSE, or -check it
//	brainwire eval     try instructions against a labelled corpus
//	brainwire export-labels  write a labelled corpus from people's corrections
//	brainwire health   probe a running server's /health (the image's HEALTHCHECK)
//
// Configuration comes from the environment; see README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/brainwire/brainwire/internal/logbuf"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "brainwire:", err)
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		var code exitCode
		if errors.As(err, &code) {
			os.Exit(code.code)
		}
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

const usage = `usage: brainwire <command> [flags]

commands:
  serve   run the capture server (simulator + SQLite unless Azure or ADK is configured)
  sim     run the offline simulator of Foundry Agent Service and an ADK API server (not an LLM)
  record  record one capture (-text or -audio) into a fixture plus its golden files
  replay  replay fixtures through the server: print the phone's SSE, or -check goldens
  eval    run a labelled corpus against the agent (or new -instructions) and report accuracy
  export-labels  write people's corrections from the store as a labelled corpus
  health  probe a running server's /health: exit 0 when it answers 200
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	logger := newLogger(getenv("BRAINWIRE_LOG_FORMAT"), stderr)
	switch args[0] {
	case "serve":
		// A server logs a line per reasoning chunk: batched, not a write
		// each (logbuf), and all written out before serve returns.
		lb := logbuf.New(stderr, 0, 0)
		defer lb.Close()
		return serve(ctx, args[1:], getenv, stdout, newLogger(getenv("BRAINWIRE_LOG_FORMAT"), lb))
	case "sim":
		return sim(ctx, args[1:], getenv, stdout, logger)
	case "record":
		return record(ctx, args[1:], getenv, stdout, stderr, logger)
	case "replay":
		return replayCmd(ctx, args[1:], stdout, stderr)
	case "eval":
		return evalCmd(ctx, args[1:], getenv, stdout, stderr, logger)
	case "export-labels":
		return exportLabels(ctx, args[1:], getenv, stdout, stderr, logger)
	case "health":
		return health(ctx, args[1:], getenv, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}
