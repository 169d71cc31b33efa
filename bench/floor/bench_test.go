package floor_test

import (
	"io"
	"testing"

	"github.com/brainwire/brainwire/simulator"
)

// BenchmarkCapture measures one capture through the floor and an unpaced
// simulator on each face, as the load tool drives them: the phone's
// stream read to its end.
func BenchmarkCapture(b *testing.B) {
	for _, face := range faces {
		b.Run(face, func(b *testing.B) {
			_, upstream := startSim(b, simulator.Config{ChunkDelay: -1})
			url := startFloor(b, face, upstream, false)
			for b.Loop() {
				resp := post(b.Context(), b, url, "Bearer "+key, `{"text":"Call mom about her birthday on Sunday #long:3"}`)
				if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 {
					b.Fatal(resp.Status, err)
				}
			}
		})
	}
}
