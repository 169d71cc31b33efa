package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The brainwire binary the tests that run it as a process share, built
// once (buildDir is removed when the tests end).
var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
	buildOut  []byte
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// brainwireBinary builds ./cmd/brainwire, once, and returns its path.
func brainwireBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "brainwire-bin-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "brainwire")
		buildOut, buildErr = exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}
