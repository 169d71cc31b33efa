package adk

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/brainwire/brainwire/recorder"
)

// fixturePayloads returns the data of every event of the recorded ADK
// fixtures.
func fixturePayloads(tb testing.TB) [][]byte {
	paths, err := filepath.Glob(filepath.Join("..", "fixtures", "adk-*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, p := range paths {
		fx, err := recorder.Load(p)
		if err != nil {
			tb.Fatal(err)
		}
		for _, ex := range fx.Exchanges {
			if ex.Response == nil {
				continue
			}
			for _, ev := range ex.Response.Events {
				out = append(out, ev.Payload())
			}
		}
	}
	return out
}

// FuzzDecodeEvent holds the fast path to encoding/json: whatever it
// decodes, encoding/json decodes the same; and no payload makes the
// decoders panic, alone or inside a stream.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range append(turnFrames(), edgeFrames...) {
		f.Add([]byte(s))
	}
	seen := map[string]bool{}
	for _, p := range fixturePayloads(f) {
		if !seen[string(p)] {
			seen[string(p)] = true
			f.Add(p)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastPath(t, data)
		_, _ = decodePayload(data)

		var body bytes.Buffer
		body.WriteString("data: ")
		body.Write(data)
		body.WriteString("\n\ndata: ")
		body.Write(data)
		body.WriteString("\r\n\r\n")
		d := NewDecoder(&body)
		d.ExpectClientTools("file_capture")
		for range 64 {
			if _, err := d.Next(); err != nil {
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && errors.Unwrap(err) == nil {
					t.Fatalf("an error without its cause: %v", err)
				}
				return
			}
		}
	})
}
