// Package recordings locates recordings of real agent service streams that
// tests use as parser test vectors: the Foundry Agent Service streams in
// shared/foundry-recordings beside the repository, and the Responses API
// streams from OpenAI and Azure OpenAI published in a Go module's test data
// (published.go). Tests skip without them locally and fail under CI, where
// they must be present.
package recordings

import (
	"os"
	"path/filepath"
	"testing"
)

// Names of the recorded streams, in the order the run produced them.
var Names = []string{
	"main_stream_response.txt",
	"fetch_current_datetime_and_weather_stream_response.txt",
	"send_email_stream_response.txt",
}

// Lookup finds the recordings directory, looking in shared/ beside the
// working directory and each of its parents.
func Lookup() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		p := filepath.Join(dir, "shared", "foundry-recordings")
		if _, err := os.Stat(filepath.Join(p, Names[0])); err == nil {
			return p, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Dir returns the recordings directory.
func Dir(t testing.TB) string {
	t.Helper()
	if p, ok := Lookup(); ok {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("shared/foundry-recordings not found beside the repository")
	}
	t.Skip("shared/foundry-recordings not found beside the repository")
	return ""
}

// Read returns one recording's bytes.
func Read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
