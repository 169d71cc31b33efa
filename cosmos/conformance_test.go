package cosmos

import (
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/storetest"
)

// testConformance runs the suite every brainwire.Store must pass, each of
// its tests on a fresh database.
func testConformance(t *testing.T, e *emulator) {
	storetest.Run(t, func(t *testing.T) brainwire.Store {
		return e.open(t, storeOptions{})
	})
}
