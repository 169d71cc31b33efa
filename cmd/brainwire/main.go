// Command brainwire is the capture backend's one binary.
//
//	brainwire serve    run the capture server
//	brainwire sim      run the offline simulator (Foundry and ADK faces) on its own
//	brainwire record   record one capture into a fixture and its golden files
//	brainwire replay   replay fixtures: print the phone's SSE, or -check it
//	brainwire eval     try instructions against a labelled corpus
//	brainwire export-labels  write a labelled corpus from people's corrections
//	brainwire shadow-report  report shadow trials of candidate instructions on live captures
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

// runFunc is a command: its arguments after its name, the environment,
// and where it writes.
type runFunc func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error

// commands are brainwire's commands, as usage lists them.
var commands = []struct {
	name, summary string
	run           runFunc
}{
	{"serve", "run the capture server (simulator + SQLite unless Azure or ADK is configured)", serve},
	{"sim", "run the offline simulator of Foundry Agent Service and an ADK API server (not an LLM)", sim},
	{"record", "record one capture (-text or -audio) into a fixture plus its golden files", record},
	{"replay", "replay fixtures through the server: print the phone's SSE, or -check goldens",
		func(ctx context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) error {
			return replayCmd(ctx, args, stdout, stderr)
		}},
	{"eval", "run a labelled corpus against the agent (or new -instructions) and report accuracy", evalCmd},
	{"export-labels", "write people's corrections from the store as a labelled corpus", exportLabels},
	{"shadow-report", "report candidate instructions tried in shadow: agreement, accuracy on people's labels, verdict", shadowReportCmd},
	{"health", "probe a running server's /health: exit 0 when it answers 200", health},
	{"version", "print the build's version and commit",
		func(_ context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) error {
			return version(args, stdout, stderr)
		}},
}

// usage lists the commands.
func usage(w io.Writer) {
	fmt.Fprint(w, "usage: brainwire <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nbrainwire <command> -h (or brainwire help <command>) says what a command does and lists\n"+
		"its flags. serve, record and eval are configured by the environment:\n"+
		"docs/configuration.md lists every variable.\n")
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return usageError{"no command given"}
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], getenv, stdout, stderr)
		}
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 2 && args[1] != "help" && !strings.HasPrefix(args[1], "-") {
			// brainwire help CMD is brainwire CMD -h.
			return run(ctx, []string{args[1], "-h"}, getenv, stdout, stderr)
		}
		usage(stdout)
		return errHelp
	}
	usage(stderr)
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
