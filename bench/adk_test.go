package bench

import (
	"io"
	"strings"

	"github.com/brainwire/brainwire/adk"
	"github.com/brainwire/brainwire/adk/adktest"
)

// adkRun is a classification as an ADK API server streams it: the first
// /run_sse body with n thought chunks, the file_capture call's partial
// and aggregated events; the resumed run's answer. It returns both bodies
// and their event count. With sentences set, each thought is a ~50-byte
// sentence instead of a token.
func adkRun(n int, sentences bool) (first, second []byte, events int) {
	thoughts := make([]string, n)
	for i := range thoughts {
		thoughts[i] = " " + tokens[i%len(tokens)]
		if sentences {
			thoughts[i] = " The capture names a person and a date; People fits."
		}
	}
	call := adktest.Turn{InvocationID: "e-0b7c6a2e-5d1f-4c8e-9a3b-2f6d1e0c9b8a", EventID: "9d1e4f2a-7b3c-4d5e-8f6a-1b2c3d4e5f6a",
		Thoughts: thoughts,
		Calls:    []adktest.FunctionCall{{ID: "adk-3f0d6c1e-5b8a-4c8e-9c51-2d7a0b6e9f11", Name: "file_capture", Args: `{"text":"Call Sarah","bucket":"People","confidence":0.9,"status":"classified"}`}},
		Usage:    &adktest.Usage{Prompt: 412, Candidates: 41, Thoughts: 88, Total: 541}}
	answer := adktest.Turn{InvocationID: call.InvocationID, EventID: "41aa0c9e-3b2d-4f1a-8e7c-6d5b4a3c2b1a",
		Texts: []string{"Filed", " to", " People."}, Usage: &adktest.Usage{Prompt: 590, Candidates: 9, Total: 599}}
	wire := func(fs []adktest.Frame) []byte {
		var b strings.Builder
		for _, f := range fs {
			b.WriteString(f.Wire())
		}
		return []byte(b.String())
	}
	c, a := call.Frames(), answer.Frames()
	return wire(c), wire(a), len(c) + len(a)
}

// adkPath is an ADK API server's: its decoder reads each body of the
// session the run is in.
var adkPath = adapterPath{
	run: adkRun,
	decoder: func(r io.Reader) decoder {
		dec := adk.NewDecoder(r)
		dec.SetSession("5b0d7a56-3c1e-4a3b-9f57-2f1f0c9c7e11", "")
		return dec
	},
}
