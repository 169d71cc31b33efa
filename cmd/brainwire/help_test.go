package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestExitStatus runs the binary as a script would: every command's -h
// exits 0 with its help on stdout and nothing on stderr; a flag it does
// not know exits 2 with the help and the error once each; an unknown
// command exits 2; a setting brainwire cannot use exits 1, naming it.
func TestExitStatus(t *testing.T) {
	bin := brainwireBinary(t)
	runBin := func(env []string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.CommandContext(context.Background(), bin, args...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
		cmd.Dir = t.TempDir()
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return o.String(), e.String(), cmd.ProcessState.ExitCode()
	}
	for _, name := range []string{"serve", "sim", "record", "replay", "eval", "export-labels", "health", "version"} {
		out, errOut, code := runBin(nil, name, "-h")
		if code != 0 || !strings.HasPrefix(out, "usage: brainwire "+name) || errOut != "" {
			t.Errorf("%s -h: exit %d, stderr %q, stdout:\n%s", name, code, errOut, out)
		}
		if again, _, _ := runBin(nil, "help", name); again != out {
			t.Errorf("brainwire help %s differs from %s -h", name, name)
		}
		out, errOut, code = runBin(nil, name, "-bogus")
		if code != 2 || out != "" || strings.Count(errOut, "usage: brainwire "+name) != 1 ||
			strings.Count(errOut, "flag provided but not defined: -bogus") != 1 ||
			!strings.HasSuffix(errOut, "brainwire: "+name+": flag provided but not defined: -bogus\n") {
			t.Errorf("%s -bogus: exit %d, stdout %q, stderr:\n%s", name, code, out, errOut)
		}
	}
	if out, _, code := runBin(nil, "help"); code != 0 || !strings.Contains(out, "commands:") {
		t.Errorf("brainwire help: exit %d\n%s", code, out)
	}
	if _, errOut, code := runBin(nil, "nonsense"); code != 2 || !strings.Contains(errOut, `unknown command "nonsense"`) {
		t.Errorf("brainwire nonsense: exit %d\n%s", code, errOut)
	}
	_, errOut, code := runBin([]string{"BRAINWIRE_LOG_FORMAT=xml"}, "serve")
	if code != 1 || errOut != "brainwire: BRAINWIRE_LOG_FORMAT: \"xml\" is not text or json\n" {
		t.Errorf("serve with BRAINWIRE_LOG_FORMAT=xml: exit %d\n%s", code, errOut)
	}
}
