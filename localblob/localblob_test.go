package localblob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/brainwire/brainwire"
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

func readAll(t *testing.T, s *localblob.Store, u string) ([]byte, brainwire.BlobInfo) {
	t.Helper()
	rc, info, err := s.Open(t.Context(), u)
	if err != nil {
		t.Fatalf("Open(%s): %v", u, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", u, err)
	}
	return b, info
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

func TestRoundTrip(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	audio := []byte("RIFF....WAVEfmt pretend audio \x00\x01\x02\xff")

	u, err := s.Put(ctx, "capture-1.wav", "audio/wav", bytes.NewReader(audio))
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

	got, info := readAll(t, s, u)
	if !bytes.Equal(got, audio) {
		t.Errorf("Open read %q, want %q", got, audio)
	}
	want := brainwire.BlobInfo{Name: "capture-1.wav", ContentType: "audio/wav", Size: int64(len(audio))}
	if info != want {
		t.Errorf("info = %+v, want %+v", info, want)
	}

	if err := s.Delete(ctx, u); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, _, err := s.Open(ctx, u); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Errorf("Open after Delete: err = %v, want code %s", err, brainwire.ENotFound)
	}
	if err := s.Delete(ctx, u); err != nil {
		t.Errorf("second Delete: %v, want nil", err)
	}
	if left := files(t, s.Dir()); len(left) != 0 {
		t.Errorf("files left after Delete: %v", left)
	}
}

func TestContentTypeDefault(t *testing.T) {
	s := newStore(t)
	u, err := s.Put(t.Context(), "x.bin", "", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, info := readAll(t, s, u); info.ContentType != brainwire.DefaultBlobContentType {
		t.Errorf("content type = %q, want %q", info.ContentType, brainwire.DefaultBlobContentType)
	}
	if _, err := s.Put(t.Context(), "y.bin", "audio/", strings.NewReader("y")); brainwire.ErrorCode(err) != brainwire.EInvalid {
		t.Errorf("Put with a malformed content type: err = %v, want code %s", err, brainwire.EInvalid)
	}
}

func TestPutReplaces(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	u1, err := s.Put(ctx, "a.ogg", "audio/ogg", strings.NewReader("first"))
	if err != nil {
		t.Fatal(err)
	}
	u2, err := s.Put(ctx, "a.ogg", "audio/webm", strings.NewReader("second, longer"))
	if err != nil {
		t.Fatal(err)
	}
	if u1 != u2 {
		t.Errorf("URLs differ for one name: %q, %q", u1, u2)
	}
	got, info := readAll(t, s, u2)
	if string(got) != "second, longer" || info.ContentType != "audio/webm" || info.Size != int64(len(got)) {
		t.Errorf("after replacing: %q %+v", got, info)
	}
}

// failingReader yields some bytes, then an error, like an upload cut off.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("connection reset")
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = 'z'
	}
	r.n -= n
	return n, nil
}

func TestFailedPutLeavesNothing(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	u, err := s.Put(ctx, "keep.wav", "audio/wav", strings.NewReader("old"))
	if err != nil {
		t.Fatal(err)
	}
	before := files(t, s.Dir())

	if _, err := s.Put(ctx, "keep.wav", "audio/mpeg", &failingReader{n: 100_000}); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if _, err := s.Put(ctx, "new.wav", "audio/wav", &failingReader{n: 10}); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}

	got, info := readAll(t, s, u)
	if string(got) != "old" || info.ContentType != "audio/wav" {
		t.Errorf("blob after a failed replace: %q %+v, want the old one", got, info)
	}
	if after := files(t, s.Dir()); !slices.Equal(before, after) {
		t.Errorf("directory after failed Puts = %v, want %v", after, before)
	}
}

func TestCancelledPut(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	// The reader cancels the context after its first chunk, as a client
	// going away mid-upload would.
	r := io.MultiReader(strings.NewReader("chunk"), readerFunc(func(p []byte) (int, error) {
		cancel()
		return copy(p, "more"), nil
	}), strings.NewReader("rest"))
	_, err := s.Put(ctx, "c.wav", "audio/wav", r)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Put: err = %v, want context.Canceled", err)
	}
	if left := files(t, s.Dir()); len(left) != 0 {
		t.Errorf("files left after a cancelled Put: %v", left)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestInvalidNames(t *testing.T) {
	s := newStore(t)
	for _, name := range []string{
		"", ".", "..", "../x.wav", "a/../../x.wav", "/etc/passwd", "a/b.wav", `a\b.wav`,
		".hidden", ".x.wav.type", "a..b", "x.wav\x00", "sp ace.wav", "ü.wav", "-x.wav",
		strings.Repeat("a", brainwire.MaxBlobNameLen+1),
	} {
		_, err := s.Put(t.Context(), name, "audio/wav", strings.NewReader("x"))
		if brainwire.ErrorCode(err) != brainwire.EInvalid {
			t.Errorf("Put(%q): err = %v, want code %s", name, err, brainwire.EInvalid)
		}
	}
	if left := files(t, s.Dir()); len(left) != 0 {
		t.Errorf("files written for invalid names: %v", left)
	}
	if _, err := s.Put(t.Context(), strings.Repeat("a", brainwire.MaxBlobNameLen), "audio/wav", strings.NewReader("x")); err != nil {
		t.Errorf("Put with a name of the maximum length: %v", err)
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
	u, err := s.Put(ctx, "mine.wav", "audio/wav", strings.NewReader("mine"))
	if err != nil {
		t.Fatal(err)
	}
	root := "file://" + filepath.ToSlash(s.Dir())

	for _, raw := range []string{
		"file://" + filepath.ToSlash(secret),
		root + "/../secret.wav",
		root + "/%2e%2e/secret.wav",
		root,
		root + "/",
		root + "/sub/mine.wav",
		root + "/.mine.wav.type",
		"file:///etc/passwd",
		"file://otherhost" + filepath.ToSlash(s.Dir()) + "/mine.wav",
		"http://127.0.0.1" + filepath.ToSlash(s.Dir()) + "/mine.wav",
		u + "?x=1",
		u + "#frag",
		"file:mine.wav",
		"mine.wav",
		"",
		"%zz",
	} {
		if _, _, err := s.Open(ctx, raw); brainwire.ErrorCode(err) != brainwire.EInvalid {
			t.Errorf("Open(%q): err = %v, want code %s", raw, err, brainwire.EInvalid)
		}
		if err := s.Delete(ctx, raw); brainwire.ErrorCode(err) != brainwire.EInvalid {
			t.Errorf("Delete(%q): err = %v, want code %s", raw, err, brainwire.EInvalid)
		}
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("file outside the store: %v", err)
	}
	// The same blob through the host spelled "localhost" is still ours.
	if got, _ := readAll(t, s, "file://localhost"+filepath.ToSlash(s.Dir())+"/mine.wav"); string(got) != "mine" {
		t.Errorf("Open via localhost read %q", got)
	}
}

func TestMissing(t *testing.T) {
	s := newStore(t)
	u := "file://" + filepath.ToSlash(s.Dir()) + "/never.wav"
	if _, _, err := s.Open(t.Context(), u); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Errorf("Open of a missing blob: err = %v, want code %s", err, brainwire.ENotFound)
	}
	if err := s.Delete(t.Context(), u); err != nil {
		t.Errorf("Delete of a missing blob: %v", err)
	}
}

func TestConcurrentPuts(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	var wg sync.WaitGroup
	urls := make([]string, 16)
	errs := make([]error, len(urls))
	for i := range urls {
		wg.Go(func() {
			body := strings.Repeat(fmt.Sprint(i), 10_000)
			urls[i], errs[i] = s.Put(ctx, fmt.Sprintf("c%d.wav", i), "audio/wav", strings.NewReader(body))
		})
	}
	wg.Wait()
	for i, u := range urls {
		if errs[i] != nil {
			t.Fatalf("Put %d: %v", i, errs[i])
		}
		if got, _ := readAll(t, s, u); string(got) != strings.Repeat(fmt.Sprint(i), 10_000) {
			t.Errorf("blob %d holds the wrong content", i)
		}
	}
}
