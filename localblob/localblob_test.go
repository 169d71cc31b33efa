package localblob_test

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/blobtest"
	"github.com/brainwire/brainwire/localblob"
)

func newStore(t *testing.T) *localblob.Store {
	t.Helper()
	s, err := localblob.New(filepath.Join(t.TempDir(), "audio"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) brainwire.BlobStore { return newStore(t) })
}

// files lists the directory, hidden files included.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestNewCreatesPrivateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := localblob.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o700 {
		t.Errorf("directory mode = %v, want 0700", perm)
	}
	if s.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", s.Dir(), dir)
	}
	if _, err := localblob.New(""); err == nil {
		t.Error(`New("") succeeded`)
	}
}

// TestFiles checks that a blob is a file in the store's directory, named
// by a file:// URL, and that Delete leaves no file of it behind.
func TestFiles(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	u, err := s.Put(ctx, "capture-1.wav", "audio/wav", strings.NewReader("audio"))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme != "file" {
		t.Fatalf("Put returned %q, want a file:// URL", u)
	}
	if got := filepath.FromSlash(parsed.Path); got != filepath.Join(s.Dir(), "capture-1.wav") {
		t.Errorf("URL path = %q, want the file in the store's directory", got)
	}
	if b, err := os.ReadFile(filepath.Join(s.Dir(), "capture-1.wav")); err != nil || !bytes.Equal(b, []byte("audio")) {
		t.Errorf("file holds %q, %v", b, err)
	}
	if err := s.Delete(ctx, u); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if left := files(t, s.Dir()); len(left) != 0 {
		t.Errorf("files left after Delete: %v", left)
	}
}

// TestRefusedPutsLeaveNoFiles checks that failed, cancelled and invalid
// Puts leave no temporary or sidecar file behind.
func TestRefusedPutsLeaveNoFiles(t *testing.T) {
	s := newStore(t)
	if _, err := s.Put(t.Context(), "keep.wav", "audio/wav", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	before := files(t, s.Dir())

	if _, err := s.Put(t.Context(), "keep.wav", "audio/mpeg", blobtest.FailingReader(100_000)); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if _, err := s.Put(t.Context(), "new.wav", "audio/wav", blobtest.FailingReader(10)); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	ctx, cancel := context.WithCancel(t.Context())
	if _, err := s.Put(ctx, "c.wav", "audio/wav", blobtest.CancelReader(cancel)); !errors.Is(err, context.Canceled) {
		t.Errorf("Put cancelled mid-upload: err = %v", err)
	}
	for _, name := range []string{"../x.wav", ".x.wav.type", strings.Repeat("a", brainwire.MaxBlobNameLen+1)} {
		if _, err := s.Put(t.Context(), name, "audio/wav", strings.NewReader("x")); err == nil {
			t.Errorf("Put(%q) succeeded", name)
		}
	}
	if after := files(t, s.Dir()); !slices.Equal(before, after) {
		t.Errorf("directory after refused Puts = %v, want %v", after, before)
	}
}

func TestForeignURLs(t *testing.T) {
	ctx := t.Context()
	parent := t.TempDir()
	s, err := localblob.New(filepath.Join(parent, "audio"))
	if err != nil {
		t.Fatal(err)
	}
	// A file next to the store, which no URL may reach.
	secret := filepath.Join(parent, "secret.wav")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "mine.wav", "audio/wav", strings.NewReader("mine")); err != nil {
		t.Fatal(err)
	}
	root := "file://" + filepath.ToSlash(s.Dir())
	blobtest.Refuses(t, s, []string{
		"file://" + filepath.ToSlash(secret),
		root + "/../secret.wav",
		root + "/%2e%2e/secret.wav",
		root + "/.mine.wav.type",
		"file:///etc/passwd",
		"file://otherhost" + filepath.ToSlash(s.Dir()) + "/mine.wav",
		"http://127.0.0.1" + filepath.ToSlash(s.Dir()) + "/mine.wav",
		"file:mine.wav",
	})
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("file outside the store: %v", err)
	}
	// The same blob through the host spelled "localhost" is still ours.
	if got, _ := blobtest.Read(t, s, "file://localhost"+filepath.ToSlash(s.Dir())+"/mine.wav"); string(got) != "mine" {
		t.Errorf("Open via localhost read %q", got)
	}
}

// A process killed during voice captures leaves their blobs, sidecars and
// half-written uploads behind; the next one sweeps what is older than the
// cutoff and leaves the files of captures still running alone.
func TestSweepRemovesWhatCrashedCapturesLeft(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := time.Now()
	put := func(name string, mtime time.Time) {
		t.Helper()
		if _, err := s.Put(ctx, name, "audio/wav", strings.NewReader("RIFF....WAVE")); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{name, "." + name + ".type"} {
			if err := os.Chtimes(filepath.Join(s.Dir(), f), mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	write := func(name string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(s.Dir(), name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	old, fresh := now.Add(-time.Hour), now.Add(-time.Second)
	put("voice-crashed-1.wav", old)
	put("voice-crashed-2.m4a", old)
	put("voice-running.wav", fresh)    // a capture of another replica, still running
	write(".tmp-111", old)             // an upload cut off by the crash
	write(".tmp-222", fresh)           // an upload still arriving
	write(".voice-gone.wav.type", old) // a sidecar whose blob never got in place
	write(".voice-new.wav.type", fresh)

	n, err := s.Sweep(ctx, now.Add(-5*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2 blobs removed", n, err)
	}
	want := []string{".tmp-222", ".voice-new.wav.type", ".voice-running.wav.type", "voice-running.wav"}
	if got := files(t, s.Dir()); !slices.Equal(got, want) {
		t.Fatalf("left %q, want %q", got, want)
	}
	// The running capture's audio is whole and can be deleted as usual.
	rc, info, err := s.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(s.Dir(), "voice-running.wav")))
	if err != nil || info.ContentType != "audio/wav" {
		t.Fatalf("Open after Sweep: %v, %+v", err, info)
	}
	rc.Close()
}
