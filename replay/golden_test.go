package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sebdah/goldie/v2"

	"github.com/brainwire/brainwire/protocol/agui/aguitest"
	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
)

const fixturesDir = "../fixtures"

// TestGolden replays every fixture through the full server path in every
// protocol, and compares each stream (NAME.sse.golden for the phone's
// capture-v2, NAME.agui.golden, NAME.v1.golden) and the telemetry summary
// (NAME.telemetry.golden) with the fixture's golden files. A change to the
// pipeline shows its effect on each client at once. Update the goldens with
//
//	GOLDIE_UPDATE=1 go test ./replay/...    (or: go test ./replay/... -update)
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixturesDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 14 {
		t.Fatalf("found %d fixtures in %s, want the corpus of at least 14", len(paths), fixturesDir)
	}
	streams := map[replay.Protocol]*goldie.Goldie{}
	for _, p := range replay.Protocols {
		streams[p] = goldie.New(t, goldie.WithFixtureDir(fixturesDir), goldie.WithNameSuffix(p.GoldenSuffix()))
	}
	tel := goldie.New(t, goldie.WithFixtureDir(fixturesDir), goldie.WithNameSuffix(replay.TelemetryGoldenSuffix))

	start := time.Now()
	t.Run("fixtures", func(t *testing.T) {
		for _, path := range paths {
			name := strings.TrimSuffix(filepath.Base(path), ".json")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fx, err := recorder.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				var phoneTelemetry string
				for _, p := range replay.Protocols {
					res, err := replay.Run(t.Context(), fx, replay.Options{Dir: t.TempDir(), Protocol: p})
					if res == nil {
						t.Fatalf("%s: %v", p, err)
					}
					if err != nil {
						t.Errorf("%s: %v", p, err)
					}
					streams[p].Assert(t, name, res.SSE)
					checkShadowed(t, fx, p, res)
					summary := string(res.Summary.Text())
					switch p {
					case replay.CaptureV2:
						tel.Assert(t, name, []byte(summary))
						phoneTelemetry = summary
					case replay.AGUI:
						// Whatever the fixture, AG-UI clients get a stream
						// their client accepts.
						frames, err := aguitest.Frames(string(res.SSE))
						if err == nil {
							err = aguitest.Verify(frames)
						}
						if err != nil {
							t.Errorf("agui stream: %v", err)
						}
					case replay.V1:
						// Earlier app builds read data lines only, and close
						// the stream at RUN_FINISHED or RUN_ERROR.
						frames, err := aguitest.Frames(string(res.SSE))
						if err == nil && (len(frames) == 0 || !strings.Contains(frames[len(frames)-1], `"type":"RUN_FINISHED"`) &&
							!strings.Contains(frames[len(frames)-1], `"type":"RUN_ERROR"`)) {
							err = fmt.Errorf("the stream does not end with RUN_FINISHED or RUN_ERROR")
						}
						if err != nil {
							t.Errorf("v1 stream: %v", err)
						}
					}
					// One pipeline: every protocol's capture is observed
					// alike, but for the route that took it.
					if got := serverSpan.ReplaceAllString(summary, "$1<route>$2"); p != replay.CaptureV2 &&
						got != serverSpan.ReplaceAllString(phoneTelemetry, "$1<route>$2") {
						t.Errorf("%s: telemetry differs from capture-v2's:\n%s", p, replay.Diff(phoneTelemetry, summary, "capture-v2", string(p)))
					}
				}
			})
		}
	})
	// How long it takes is logged, not judged: timings belong in
	// benchmarks, where a busy machine cannot fail the build.
	t.Logf("%d fixtures replayed in %d protocols in %s; %d of those replays again in shadow (%d trials kept)",
		len(paths), len(replay.Protocols), time.Since(start).Round(time.Millisecond), shadowed.Load(), kept.Load())
}

// shadowCandidate are the candidate instructions the goldens are replayed
// with in shadow.
const shadowCandidate = "Classify the capture into People, Projects, Ideas or Admin.\nAdmin cues: gym\n"

// checkShadowed replays fx again with candidate instructions in shadow, as
// serve runs them at sample 1: the phone's bytes and the capture's
// telemetry are the goldens', byte for byte, and a first capture that
// filed an item has its trial kept.
func checkShadowed(t *testing.T, fx *recorder.Fixture, p replay.Protocol, plain *replay.Result) {
	res, err := replay.Run(t.Context(), fx, replay.Options{Dir: t.TempDir(), Protocol: p, Shadow: shadowCandidate})
	if errors.Is(err, replay.ErrNotShadowable) {
		return
	}
	if res == nil {
		t.Fatalf("%s in shadow: %v", p, err)
	}
	if err != nil {
		t.Errorf("%s in shadow: %v", p, err)
	}
	if !bytes.Equal(res.SSE, plain.SSE) {
		t.Errorf("%s: the phone's stream differs with a shadow:\n%s", p, replay.Diff(string(plain.SSE), string(res.SSE), "shadow off", "shadow on"))
	}
	if got, want := string(res.Summary.Text()), string(plain.Summary.Text()); got != want {
		t.Errorf("%s: the capture's telemetry differs with a shadow:\n%s", p, replay.Diff(want, got, "shadow off", "shadow on"))
	}
	want := ""
	if fx.Capture.FollowUp == nil && plain.Summary.Outcome.Filed() {
		want = "kept"
	}
	if res.Shadow != want {
		t.Errorf("%s: the shadow ended %q, want %q", p, res.Shadow, want)
	}
	shadowed.Add(1)
	if res.Shadow == "kept" {
		kept.Add(1)
	}
}

// shadowed counts the replays in shadow, kept their trials kept.
var shadowed, kept atomic.Int64

// serverSpan matches the HTTP server span's line in a telemetry summary.
var serverSpan = regexp.MustCompile(`(?m)^(\s*POST )\S+( \[server\])$`)
