// Command brainwire is the capture backend's one binary.
//
//	brainwire serve    run the capture server
//	brainwire sim      run the offline simulator (Foundry and ADK faces) on its own
//	brainwire record   record one capture into a fixture and its golden files
//	brainwire replay   replay fixtures: print the phone's SSE, or -check it
//	brainwire eval     try instructions against a labelled corpus
//	brainwire export-labels  write a labelled corpus from people's corrections
//	brainwire health   probe a running server's /health (the image's HEALTHCHECK)
//	brainwire version  print the build's version and commit
//
// serve, record and eval are configured by the environment
// (docs/configuration.md lists every variable); the commands' own settings
// are their flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if err == nil || errors.Is(err, errHelp) {
		return
	}
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

const usage = `usage: brainwire <command> [flags]

commands:
  serve   run the capture server (simulator + SQLite unless Azure or ADK is configured)
  sim     run the offline simulator of Foundry Agent Service and an ADK API server (not an LLM)
  record  record one capture (-text or -audio) into a fixture plus its golden files
  replay  replay fixtures through the server: print the phone's SSE, or -check goldens
  eval    run a labelled corpus against the agent (or new -instructions) and report accuracy
  export-labels  write people's corrections from the store as a labelled corpus
  health  probe a running server's /health: exit 0 when it answers 200
  version print the build's version and commit

brainwire <command> -h (or brainwire help <command>) says what a command does and lists
its flags. serve, record and eval are configured by the environment:
docs/configuration.md lists every variable.
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr)
	case "sim":
		return sim(ctx, args[1:], getenv, stdout, stderr)
	case "record":
		return record(ctx, args[1:], getenv, stdout, stderr)
	case "replay":
		return replayCmd(ctx, args[1:], stdout, stderr)
	case "eval":
		return evalCmd(ctx, args[1:], getenv, stdout, stderr)
	case "export-labels":
		return exportLabels(ctx, args[1:], getenv, stdout, stderr)
	case "health":
		return health(ctx, args[1:], getenv, stdout, stderr)
	case "version":
		return version(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) == 2 && args[1] != "help" && !strings.HasPrefix(args[1], "-") {
			// brainwire help CMD is brainwire CMD -h.
			return run(ctx, []string{args[1], "-h"}, getenv, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return errHelp
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

// Log formats (BRAINWIRE_LOG_FORMAT).
const (
	logText = "text"
	logJSON = "json"
)

// newLogger logs to w, from level on, in the format BRAINWIRE_LOG_FORMAT
// names: text (the default) or json.
func newLogger(getenv func(string) string, w io.Writer, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch v := getenv("BRAINWIRE_LOG_FORMAT"); v {
	case "", logText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case logJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, badSetting("BRAINWIRE_LOG_FORMAT", v, logText+" or "+logJSON)
	}
}
