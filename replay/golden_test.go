package replay_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sebdah/goldie/v2"

	"github.com/brainwire/brainwire/recorder"
	"github.com/brainwire/brainwire/replay"
)

const fixturesDir = "../fixtures"

// TestGolden replays every fixture through the full server path and
// compares the phone's SSE bytes and the telemetry summary with the
// fixture's golden files. Update the goldens with
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
	sse := goldie.New(t, goldie.WithFixtureDir(fixturesDir), goldie.WithNameSuffix(replay.SSEGoldenSuffix))
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
				res, err := replay.Run(t.Context(), fx, replay.Options{Dir: t.TempDir()})
				if res == nil {
					t.Fatal(err)
				}
				if err != nil {
					t.Error(err)
				}
				sse.Assert(t, name, res.SSE)
				tel.Assert(t, name, res.Summary.Text())
			})
		}
	})
	// How long it takes is logged, not judged: timings belong in
	// benchmarks, where a busy machine cannot fail the build.
	t.Logf("%d fixtures replayed in %s", len(paths), time.Since(start).Round(time.Millisecond))
}
