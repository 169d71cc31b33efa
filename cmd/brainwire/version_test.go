package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// brainwire version reads what `go version -m` reads: the main module's
// version, the commit and whether the tree had changes, and the Go
// version.
func TestVersion(t *testing.T) {
	for _, c := range []struct {
		main     string
		settings map[string]string
		want     string
	}{
		{"v1.4.0", map[string]string{"vcs.revision": "2e17e12e7b66", "vcs.time": "2026-11-29T02:45:46Z", "vcs.modified": "false"},
			"brainwire v1.4.0 (commit 2e17e12e7b66, 2026-11-29T02:45:46Z) go1.26.8"},
		{"v0.0.0-20261129024546-2e17e12e7b66+dirty", map[string]string{"vcs.revision": "2e17e12e7b66", "vcs.modified": "true"},
			"brainwire v0.0.0-20261129024546-2e17e12e7b66+dirty (commit 2e17e12e7b66+dirty) go1.26.8"},
		{"(devel)", nil, "brainwire (devel) (commit unknown) go1.26.8"},
		{"", nil, "brainwire (devel) (commit unknown) go1.26.8"},
	} {
		info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/brainwire/brainwire", Version: c.main}}
		for k, v := range c.settings {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: k, Value: v})
		}
		if got := describeBuild(info); got != c.want {
			t.Errorf("%s %v:\n got %s\nwant %s", c.main, c.settings, got, c.want)
		}
	}
	out, err := runCmd(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "brainwire ") || !strings.HasSuffix(out, " "+runtime.Version()+"\n") {
		t.Errorf("brainwire version: %q, %v", out, err)
	}
}
