// Package testaudio makes real audio for tests: speech synthesized by
// espeak-ng, so that uploads, blob stores and transcription see the bytes of
// a genuine recording rather than a stand-in.
//
// espeak-ng comes from the Debian package of that name (.ci/run installs it).
// When it is missing, tests skip locally but fail under CI, so a broken
// install can never turn into a silently green run.
package testaudio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// WAV returns text spoken by espeak-ng as a RIFF/WAVE file (16-bit mono PCM).
func WAV(t testing.TB, text string) []byte {
	t.Helper()
	bin := espeak(t)
	out := filepath.Join(t.TempDir(), "speech.wav")
	cmd := exec.CommandContext(t.Context(), bin, "-v", "en", "-w", out, "--", text)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("synthesizing %q with espeak-ng: %v\n%s", text, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("reading synthesized speech: %v", err)
	}
	if err := checkWAV(b); err != nil {
		t.Fatalf("espeak-ng wrote an unexpected file: %v", err)
	}
	return b
}

func espeak(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("espeak-ng")
	if err != nil {
		msg := fmt.Sprintf("espeak-ng not installed (apt-get install espeak-ng): %v", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// checkWAV makes sure b is a WAVE file with some audio in it, so a silently
// broken synthesizer fails here and not in a confusing place later.
func checkWAV(b []byte) error {
	if len(b) < 44 || !bytes.Equal(b[0:4], []byte("RIFF")) || !bytes.Equal(b[8:12], []byte("WAVE")) {
		return fmt.Errorf("not a RIFF/WAVE file (%d bytes)", len(b))
	}
	if size := binary.LittleEndian.Uint32(b[4:8]); int(size)+8 != len(b) {
		// espeak-ng patches the sizes when it closes the file; a mismatch
		// means the file was cut short.
		return fmt.Errorf("RIFF size %d does not match file size %d", size, len(b))
	}
	if len(b) < 1000 {
		return fmt.Errorf("only %d bytes: no speech", len(b))
	}
	return nil
}
