// Package fuzztest supports the fuzz targets of the packages that read
// bytes from outside: seed inputs taken from what was really recorded (the
// fixtures in fixtures/*.json and the service recordings of
// internal/recordings), and a bound on how long one input may run.
package fuzztest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/recordings"
	"github.com/brainwire/brainwire/recorder"
)

// FixtureFiles returns the bytes of every fixture file, in name order.
func FixtureFiles(tb testing.TB) [][]byte {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(fixturesDir(tb), "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) == 0 {
		tb.Fatal("no fixtures found")
	}
	slices.Sort(paths)
	out := make([][]byte, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// Fixtures returns every fixture, loaded, in name order.
func Fixtures(tb testing.TB) []*recorder.Fixture {
	tb.Helper()
	var out []*recorder.Fixture
	for _, b := range FixtureFiles(tb) {
		fx, err := recorder.Unmarshal(b)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, fx)
	}
	return out
}

// SmallFixtures returns every fixture as a file again, cut down to the
// first two and the last streamed events of each response: small seeds of
// the real shapes.
func SmallFixtures(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, fx := range Fixtures(tb) {
		c := *fx
		c.Exchanges = nil
		for _, ex := range fx.Exchanges {
			if rs := ex.Response; rs != nil && len(rs.Events) > 3 {
				r := *rs
				r.Events = append(append([]recorder.Event(nil), rs.Events[:2]...), rs.Events[len(rs.Events)-1])
				ex.Response = &r
			}
			c.Exchanges = append(c.Exchanges, ex)
		}
		b, err := recorder.Marshal(&c)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// Recordings returns the recorded streams of the real service, whole.
func Recordings(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, name := range recordings.Names {
		out = append(out, recordings.Read(tb, name))
	}
	return out
}

// Streams returns seeds cut from every recorded upstream event stream as
// it came over the wire (each streamed response of the fixtures, with any
// partial event it broke off in, and each recording): runs of whole
// events of at most max bytes each (an event longer than max is a run
// alone), from the start and the end of each stream, without duplicates.
// Small seeds keep the fuzz engine fast; whole streams are the unit
// tests' business.
func Streams(tb testing.TB, max int) [][]byte {
	tb.Helper()
	var streams [][][]byte // each stream as its events' wire bytes
	for _, fx := range Fixtures(tb) {
		for _, ex := range fx.Exchanges {
			rs := ex.Response
			if rs == nil || !rs.IsStream() {
				continue
			}
			var evs [][]byte
			for _, ev := range rs.Events {
				evs = append(evs, ev.AppendWire(nil))
			}
			if p := rs.PartialBytes(); len(p) > 0 {
				evs = append(evs, p)
			}
			streams = append(streams, evs)
		}
	}
	for _, rec := range Recordings(tb) {
		var evs [][]byte
		for block := range strings.SplitAfterSeq(string(rec), "\n\n") {
			evs = append(evs, []byte(block))
		}
		streams = append(streams, evs)
	}
	var out [][]byte
	seen := map[string]bool{}
	for _, evs := range streams {
		runs := cut(evs, max)
		if len(runs) > runsPerStream {
			runs = append(runs[:runsPerStream-2], runs[len(runs)-2:]...)
		}
		for _, r := range runs {
			if !seen[string(r)] {
				seen[string(r)] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// runsPerStream bounds the seeds one stream gives: long runs of reasoning
// deltas add little past the first few.
const runsPerStream = 4

// cut joins consecutive events into runs of at most max bytes.
func cut(evs [][]byte, max int) [][]byte {
	var runs [][]byte
	var cur []byte
	for _, ev := range evs {
		if len(cur) > 0 && len(cur)+len(ev) > max {
			runs = append(runs, cur)
			cur = nil
		}
		cur = append(cur, ev...)
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// Deadline turns a hang into a crash, which the fuzz engine keeps (and
// minimizes) like any other: unless the returned stop is called within d,
// the process panics and prints every goroutine. Go's fuzz engine does not
// bound the time of one input itself.
//
//	defer fuzztest.Deadline(10 * time.Second)()
func Deadline(d time.Duration) (stop func()) {
	t := time.AfterFunc(d, func() {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("fuzz input still running after %s", d))
	})
	return func() { t.Stop() }
}

// fixturesDir finds fixtures/ at the root of the module, above the
// working directory (a package's directory under go test).
func fixturesDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/brainwire/brainwire\n")) {
			return filepath.Join(dir, "fixtures")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("the module's root (go.mod) not found above the working directory")
		}
		dir = parent
	}
}
