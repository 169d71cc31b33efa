package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A serve killed (kill -9) during voice captures left their audio in the
// data directory; the next serve deletes it before it listens, and leaves
// the audio of a capture another replica sharing the directory is running.
func TestServeSweepsAudioOfCapturesThatNeverFinished(t *testing.T) {
	data := t.TempDir()
	audio := filepath.Join(data, "audio")
	if err := os.MkdirAll(audio, 0o700); err != nil {
		t.Fatal(err)
	}
	// What the killed process left: blobs with their sidecars, an upload
	// cut off half-way. Older than the longest a capture may keep its
	// audio (the upload and run timeouts, 2m and 60s by default, and a
	// minute).
	crashed := time.Now().Add(-10 * time.Minute)
	running := time.Now().Add(-20 * time.Second)
	for name, mtime := range map[string]time.Time{
		"voice-a1.m4a": crashed, ".voice-a1.m4a.type": crashed,
		"voice-b2.wav": crashed, ".voice-b2.wav.type": crashed,
		".tmp-3141":    crashed,
		"voice-c3.ogg": running, ".voice-c3.ogg.type": running,
		".tmp-2718": running,
	} {
		p := filepath.Join(audio, name)
		if err := os.WriteFile(p, []byte("audio"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	r, err := startReplica(t, map[string]string{"BRAINWIRE_DATA_DIR": data}, false)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(audio)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{".tmp-2718", ".voice-c3.ogg.type", "voice-c3.ogg"}; !slices.Equal(left, want) {
		t.Errorf("audio left after start: %q, want %q", left, want)
	}
	if logs := r.logs.String(); !strings.Contains(logs, "files=2") {
		t.Errorf("the sweep is not in the log:\n%s", logs)
	}
}
