package testaudio

import (
	"bytes"
	"testing"
)

func TestWAV(t *testing.T) {
	b := WAV(t, "Remind me to call Sarah on Friday.")
	if err := checkWAV(b); err != nil {
		t.Fatal(err)
	}
	// 22050 Hz 16-bit mono: a short sentence is well over half a second.
	if len(b) < 22050 {
		t.Errorf("only %d bytes of speech", len(b))
	}
	if other := WAV(t, "Buy milk."); bytes.Equal(b, other) {
		t.Error("different texts gave the same audio")
	}
}
