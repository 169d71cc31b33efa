// Package recordings locates recordings of real agent service streams that
// tests use as parser test vectors: the Foundry Agent Service streams in
// this package's testdata/foundry (test assets of the Azure SDK for
// Python, MIT-licensed: its README and LICENSE say where from), and the
// Responses API streams from OpenAI and Azure OpenAI published in a Go
// module's test data (published.go), which tests skip without locally and
// fail without under CI.
package recordings

import (
	"embed"
	"testing"
)

// Names of the recorded streams, in the order the run produced them.
var Names = []string{
	"main_stream_response.txt",
	"fetch_current_datetime_and_weather_stream_response.txt",
	"send_email_stream_response.txt",
}

// foundry holds the Foundry recordings, built into the tests that read
// them, so that they need nothing beside the package.
//
//go:embed testdata/foundry/*.txt
var foundry embed.FS

// Read returns one recording's bytes.
func Read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := foundry.ReadFile("testdata/foundry/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
