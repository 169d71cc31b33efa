// Package recordings locates recordings of real agent service streams that
// tests use as parser test vectors: the Foundry Agent Service streams in
// this package's testdata/foundry (test assets of the Azure SDK for
// Python, MIT-licensed: its README and LICENSE say where from), and the
// Responses API streams from OpenAI and Azure OpenAI published in a Go
// module's test data (published.go), which tests skip without locally and
// fail without under CI.
package recordings

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Names of the recorded streams, in the order the run produced them.
var Names = []string{
	"main_stream_response.txt",
	"fetch_current_datetime_and_weather_stream_response.txt",
	"send_email_stream_response.txt",
}

// Lookup returns the directory of the Foundry recordings, in this
// package's source tree.
func Lookup() (string, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", false
	}
	p := filepath.Join(filepath.Dir(file), "testdata", "foundry")
	if _, err := os.Stat(filepath.Join(p, Names[0])); err != nil {
		return "", false
	}
	return p, true
}

// Dir returns the directory of the Foundry recordings.
func Dir(t testing.TB) string {
	t.Helper()
	p, ok := Lookup()
	if !ok {
		t.Fatal("the Foundry recordings are missing from internal/recordings/testdata/foundry")
	}
	return p
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
