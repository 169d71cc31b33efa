package responses

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainwire/brainwire/recorder"
)

// fixtureStreams returns the data of the Responses API events recorded in
// ../fixtures, one of each event type and text shape per fixture, to seed
// the fuzz targets with what the simulator's Responses face sends.
func fixtureStreams(tb testing.TB) []string {
	paths, err := filepath.Glob("../fixtures/*.json")
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		fx, err := recorder.Load(p)
		if err != nil {
			tb.Fatal(err)
		}
		seen := map[string]bool{}
		for _, ex := range fx.Exchanges {
			if ex.Response == nil {
				continue
			}
			for _, ev := range ex.Response.Events {
				if !strings.HasPrefix(ev.Name, "response.") && ev.Name != TypeError {
					break // another API's stream
				}
				if seen[ev.Name] {
					continue
				}
				seen[ev.Name] = true
				out = append(out, string(ev.Payload()))
			}
		}
	}
	return out
}
