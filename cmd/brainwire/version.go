package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime/debug"
)

const versionAbout = `
Prints the build's version and commit, as ` + "`go version -m`" + ` reads them.`

func version(args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("version", "version", versionAbout, "")
	if err := cmd.parse(args, stdout, stderr); err != nil {
		return err
	}
	if err := cmd.noArgs(stderr); err != nil {
		return err
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("version: the binary carries no build information")
	}
	fmt.Fprintln(stdout, describeBuild(info))
	return nil
}

// describeBuild is one line: "brainwire VERSION (commit REV[+dirty], TIME) GOVERSION".
// A build outside a repository has no commit, and `go run` none either.
func describeBuild(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	commit := "unknown"
	if rev := settings["vcs.revision"]; rev != "" {
		commit = rev
		if settings["vcs.modified"] == "true" {
			commit += "+dirty"
		}
		if t := settings["vcs.time"]; t != "" {
			commit += ", " + t
		}
	}
	return fmt.Sprintf("brainwire %s (commit %s) %s", cmp.Or(info.Main.Version, "(devel)"), commit, info.GoVersion)
}
