package main

import (
	"context"
	"fmt"
	"io"

	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
)

const replayAbout = `
Replays recorded capture runs through the real server path, with a fake
agent service serving each fixture's recorded exchanges, and prints the SSE
the phone would get (or, with -protocol, an AG-UI or v1 client). With
-check, compares the output in every protocol with the fixture's golden
files instead and exits non-zero on any difference.`

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommand("replay", "replay [flags] FIXTURE...", replayAbout, "")
	speed := fs.Float64("speed", 0, "timing: 0 replays at once, 1 in real time, 2 twice as fast, ...")
	check := fs.Bool("check", false, "compare with the golden files (every protocol's); exit non-zero on a difference")
	protocol := fs.String("protocol", string(replay.CaptureV2), "the protocol to ask in and print: capture-v2 (the phone's), agui, v1")
	if err := fs.parse(args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fs.fail(stderr, "no fixture given")
	}
	if *speed < 0 {
		return usageError{"replay: -speed must not be negative"}
	}
	proto, err := replay.ParseProtocol(*protocol)
	if err != nil {
		return usageError{"replay: " + err.Error()}
	}
	// The server's logs would bury the SSE; failures come back as errors.
	opts := replay.Options{Speed: *speed}
	failed := 0
	for _, path := range fs.Args() {
		if *check {
			report, err := replay.Check(ctx, path, opts)
			switch {
			case err != nil:
				fmt.Fprintf(stdout, "FAIL %s\n%v\n", path, err)
				failed++
			case report != "":
				fmt.Fprintf(stdout, "FAIL %s\n%s", path, report)
				failed++
			default:
				fmt.Fprintf(stdout, "ok   %s\n", path)
			}
			continue
		}
		if fs.NArg() > 1 {
			// An SSE comment line: the output stays a valid event stream.
			fmt.Fprintf(stdout, ": %s\n", path)
		}
		fx, err := recorder.Load(path)
		if err != nil {
			return err
		}
		if _, err := replay.Run(ctx, fx, replay.Options{Speed: *speed, Out: stdout, Protocol: proto}); err != nil {
			return err
		}
	}
	if failed > 0 {
		verb := "differ"
		if failed == 1 {
			verb = "differs"
		}
		return fmt.Errorf("%d of %s %s from the golden files", failed, counted(fs.NArg(), "fixture"), verb)
	}
	return nil
}
