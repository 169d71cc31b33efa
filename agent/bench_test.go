package agent_test

import (
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/agent"
)

// BenchmarkLoop measures what the loop adds to each event on its way from
// a provider to the server: a run of 10,000 text chunks, a tool round and
// a closing response, already decoded, read through Loop.Run.
func BenchmarkLoop(b *testing.B) {
	first := []brainwire.AgentEvent{status(brainwire.RunInProgress)}
	for range 10000 {
		first = append(first, text(" token"))
	}
	first = append(first, call("c1"), status(brainwire.RunRequiresAction))
	responses := [][]brainwire.AgentEvent{first, completing}
	events := len(first) + len(completing) + 1 // and the tool's result
	p := &scripted{}
	loop := agent.NewLoop(p)
	b.ReportAllocs()
	for b.Loop() {
		*p = scripted{responses: responses}
		n := 0
		for _, err := range loop.Run(b.Context(), brainwire.RunRequest{}, echo{}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*events), "ns/event")
}
