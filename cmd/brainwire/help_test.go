package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// commands are brainwire's commands, each with whether the environment
// configures it (its help points at README.md's tables).
var commands = []struct {
	name string
	env  bool
}{
	{"serve", true}, {"sim", false}, {"record", true}, {"replay", false}, {"eval", true},
	{"export-labels", true}, {"health", false},
}

// TestHelp: every command's -h prints one style of help on stdout (its
// usage line, what it does, where its configuration is, its flags) and
// returns errHelp, which main turns into exit status 0; brainwire help CMD
// says the same.
func TestHelp(t *testing.T) {
	oneDefault := regexp.MustCompile(`\(default [^)]*\).*\(default`)
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), []string{c.name, "-h"}, envFunc(nil), &stdout, &stderr)
			if !errors.Is(err, errHelp) {
				t.Fatalf("%s -h: %v", c.name, err)
			}
			help := stdout.String()
			if stderr.Len() > 0 {
				t.Errorf("%s -h wrote on stderr:\n%s", c.name, stderr.String())
			}
			if !strings.HasPrefix(help, "usage: brainwire "+c.name+" ") || strings.Contains(help, "Usage of") {
				t.Errorf("%s -h does not start with its usage line:\n%s", c.name, help)
			}
			if !strings.Contains(help, "\nflags:\n  -") {
				t.Errorf("%s -h lists no flags:\n%s", c.name, help)
			}
			if c.env && !strings.Contains(help, "README.md") {
				t.Errorf("%s -h does not say where its environment is described:\n%s", c.name, help)
			}
			for line := range strings.SplitSeq(help, "\n") {
				if oneDefault.MatchString(line) {
					t.Errorf("%s -h gives two defaults: %s", c.name, line)
				}
			}
			var again bytes.Buffer
			if err := run(t.Context(), []string{"help", c.name}, envFunc(nil), &again, &stderr); !errors.Is(err, errHelp) || again.String() != help {
				t.Errorf("brainwire help %s differs from %s -h (%v)", c.name, c.name, err)
			}
		})
	}
	var stdout bytes.Buffer
	if err := run(t.Context(), []string{"-h"}, envFunc(nil), &stdout, &stdout); !errors.Is(err, errHelp) || !strings.Contains(stdout.String(), "commands:") {
		t.Errorf("brainwire -h: %v\n%s", err, stdout.String())
	}
}

// TestHelpTexts pins what the help of serve, record and sim says about
// their simulator flags: one default each, the environment named.
func TestHelpTexts(t *testing.T) {
	for cmd, wants := range map[string][]string{
		"serve":  {"Configuration is the environment", "-sim-api string", `(default "responses")`, "-sim-chunk-delay duration", "(0: none) (default 25ms)", "-sim-instructions file", "-init-db"},
		"record": {"configured by the\nenvironment", "-sim-chunk-delay duration", "(0: none) (default 25ms)", "BRAINWIRE_RECORD_SECRETS"},
		"sim":    {"-addr string", `(default "127.0.0.1:8100")`, "-chunk-delay duration", "-max-threads int", "(default 512)", "-instructions file"},
		"eval":   {"-sim-chunk-delay duration\n    \tthe simulator's pause between reasoning chunks (0: none)\n"},
		"health": {"-wait duration", "BRAINWIRE_ADDR"},
	} {
		var stdout bytes.Buffer
		_ = run(t.Context(), []string{cmd, "-h"}, envFunc(nil), &stdout, &stdout)
		for _, w := range wants {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%s -h does not say %q:\n%s", cmd, w, stdout.String())
			}
		}
	}
}

// TestUnknownFlag: a flag a command does not know prints its help on
// stderr, once, and the error, once, after it; the exit status is 2.
func TestUnknownFlag(t *testing.T) {
	for _, c := range commands {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), []string{c.name, "-bogus"}, envFunc(nil), &stdout, &stderr)
		var u usageError
		if !errors.As(err, &u) || err.Error() != c.name+": flag provided but not defined: -bogus" {
			t.Errorf("%s -bogus: %v", c.name, err)
		}
		if n := strings.Count(stderr.String(), "usage: brainwire "+c.name); n != 1 || strings.Contains(stderr.String(), "-bogus") || stdout.Len() > 0 {
			t.Errorf("%s -bogus: the help %d times; stderr:\n%s", c.name, n, stderr.String())
		}
	}
}

// TestHelpExitStatus runs the binary: -h exits 0 with the help on stdout
// and nothing on stderr; an unknown flag exits 2 with the help and the
// error once each; a bad setting exits 1 naming it.
func TestHelpExitStatus(t *testing.T) {
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
	for _, c := range commands {
		out, errOut, code := runBin(nil, c.name, "-h")
		if code != 0 || !strings.HasPrefix(out, "usage: brainwire "+c.name) || errOut != "" {
			t.Errorf("%s -h: exit %d, stderr %q, stdout:\n%s", c.name, code, errOut, out)
		}
		out, errOut, code = runBin(nil, c.name, "-bogus")
		if code != 2 || out != "" || strings.Count(errOut, "usage: brainwire "+c.name) != 1 ||
			strings.Count(errOut, "flag provided but not defined: -bogus") != 1 ||
			!strings.HasSuffix(errOut, "brainwire: "+c.name+": flag provided but not defined: -bogus\n") {
			t.Errorf("%s -bogus: exit %d, stdout %q, stderr:\n%s", c.name, code, out, errOut)
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

// TestCounted: one of a thing is singular.
func TestCounted(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{{0, "tool call", "0 tool calls"}, {1, "tool call", "1 tool call"}, {2, "case", "2 cases"}, {1, "case", "1 case"}} {
		if got := counted(c.n, c.noun); got != c.want {
			t.Errorf("counted(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
