package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestExitStatus runs the binary as a script would: a command's -h exits
// 0, a flag it does not know 2 with the error said once, an unknown
// command 2, a setting brainwire cannot use 1.
func TestExitStatus(t *testing.T) {
	bin := brainwireBinary(t)
	for _, c := range []struct {
		env    string
		args   []string
		code   int
		stderr string // its last line
	}{
		{"", []string{"serve", "-h"}, 0, ""},
		{"", []string{"help", "eval"}, 0, ""},
		{"", []string{"health", "-bogus"}, 2, "brainwire: health: flag provided but not defined: -bogus"},
		{"", []string{"nonsense"}, 2, `brainwire: unknown command "nonsense"`},
		{"BRAINWIRE_LOG_FORMAT=xml", []string{"serve"}, 1, `brainwire: BRAINWIRE_LOG_FORMAT: "xml" is not text or json`},
	} {
		cmd := exec.CommandContext(context.Background(), bin, c.args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), c.env}
		cmd.Dir = t.TempDir()
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(e.String()), "\n")
		if code := cmd.ProcessState.ExitCode(); code != c.code || lines[len(lines)-1] != c.stderr || strings.Count(e.String(), "-bogus") > 1 ||
			(c.code == 0 && !strings.HasPrefix(o.String(), "usage: brainwire ")) {
			t.Errorf("brainwire %v: exit %d, stdout %q, stderr:\n%s", c.args, code, o.String(), e.String())
		}
	}
}
