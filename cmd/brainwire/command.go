package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// errHelp is returned by a command whose help was asked for (-h): the help
// is printed, and brainwire exits 0.
var errHelp = errors.New("help requested")

// usageError is a command line brainwire cannot run: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitCode is an error that sets the process's exit status.
type exitCode struct {
	code int
	msg  string
}

func (e exitCode) Error() string { return e.msg }

// The environment notes of the commands' help: what the environment
// configures.
const (
	envServe = "Configuration is the environment: docs/configuration.md lists every variable."
	envAgent = envServe
)

// command is one of brainwire's commands: its flags and its help, one
// style for all of them: the usage line, what the command does, what the
// environment configures, then the flags.
type command struct {
	*flag.FlagSet
	synopsis string // after "usage: brainwire "
	about    string // what the command does
	env      string // what the environment configures; "" for nothing
}

func newCommand(name, synopsis, about, env string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// parse reports errors and help itself, once.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &command{FlagSet: fs, synopsis: synopsis, about: about, env: env}
}

// help writes the command's help to w.
func (c *command) help(w io.Writer) {
	fmt.Fprintf(w, "usage: brainwire %s\n\n%s\n", c.synopsis, strings.TrimSpace(c.about))
	if c.env != "" {
		fmt.Fprintf(w, "\n%s\n", c.env)
	}
	flags := false
	c.VisitAll(func(*flag.Flag) { flags = true })
	if flags {
		fmt.Fprint(w, "\nflags:\n")
	}
	c.SetOutput(w)
	c.PrintDefaults()
	c.SetOutput(io.Discard)
}

// parse parses args. Asked for help (-h, -help), it prints the help on
// stdout and returns errHelp; on a flag it does not know or a malformed
// value, it prints the help on stderr and returns the error, which main
// prints once, after it.
func (c *command) parse(args []string, stdout, stderr io.Writer) error {
	err := c.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		c.help(stdout)
		return errHelp
	}
	c.help(stderr)
	return usageError{c.Name() + ": " + err.Error()}
}

// fail prints the help on stderr and returns a usage error: the command
// line is wrong beyond its flags (a missing argument).
func (c *command) fail(stderr io.Writer, format string, args ...any) error {
	c.help(stderr)
	return usageError{c.Name() + ": " + fmt.Sprintf(format, args...)}
}

// noArgs refuses arguments after the flags.
func (c *command) noArgs(stderr io.Writer) error {
	if c.NArg() > 0 {
		return c.fail(stderr, "unexpected arguments %q", c.Args())
	}
	return nil
}

// counted writes n and a regular noun, singular or plural: "1 tool
// call", "2 tool calls".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
