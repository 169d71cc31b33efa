// Package instructions holds the Classifier's instructions for an agent
// brainwire defines itself (an ephemeral agent of the Responses API): the
// text sent with every request, and the version it is known by.
package instructions

import (
	_ "embed"
	"fmt"
	"os"
	"strings"

	"github.com/brainwire/brainwire"
)

//go:embed classifier.md
var classifier string

// MaxSize bounds an instructions file: the Responses API takes a few
// thousand words of instructions, not a document.
const MaxSize = 256 << 10

// Instructions are an agent's instructions and their version.
type Instructions struct {
	Text string
	// Version is brainwire.ContentVersion of the text: the same file has
	// the same version wherever it runs, and any edit gives a new one.
	Version string
	// Source is where the text came from: a file's path, or "built-in".
	Source string
}

// Default returns the built-in Classifier instructions.
func Default() Instructions { return New(classifier, "built-in") }

// New returns text as instructions from source.
func New(text, source string) Instructions {
	return Instructions{Text: text, Version: brainwire.ContentVersion(text), Source: source}
}

// Load reads instructions from the file at path.
func Load(path string) (Instructions, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Instructions{}, fmt.Errorf("instructions: %w", err)
	}
	if st.Size() > MaxSize {
		return Instructions{}, fmt.Errorf("instructions: %s is %d bytes, over the %d-byte limit", path, st.Size(), MaxSize)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Instructions{}, fmt.Errorf("instructions: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return Instructions{}, fmt.Errorf("instructions: %s is empty", path)
	}
	return New(string(b), path), nil
}
