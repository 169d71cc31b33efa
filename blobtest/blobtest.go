// Package blobtest is the conformance suite every brainwire.BlobStore must
// pass. A backend's own tests call Run with a function that opens a fresh,
// empty store:
//
//	func TestConformance(t *testing.T) {
//		blobtest.Run(t, func(t *testing.T) brainwire.BlobStore {
//			return newStore(t)
//		})
//	}
//
// Beyond what the BlobStore interface's doc comments say, the suite pins
// these behaviours, which the voice handler and the transcribe_audio tool
// rely on:
//
//   - Open returns the bytes Put stored, whatever their length, with the
//     name, the content type as given (parameters included, or
//     brainwire.DefaultBlobContentType when none was given) and the size.
//   - Put under a name already taken replaces that blob and returns the same
//     URL. A Put whose reader fails stores nothing: an earlier blob of the
//     name stays whole, and a new name stays absent. A cancelled context's
//     error stays in the returned error's chain.
//   - Names must pass brainwire.ValidBlobName and content types must parse;
//     both are EInvalid otherwise, before anything is stored.
//   - The URL Put returns ends in "/" and the name. URLs with a query or
//     fragment, other path segments, or that are not URLs of the store at
//     all are EInvalid for Open and Delete; a missing blob is ENotFound for
//     Open and not an error for Delete.
//   - Concurrent calls on different names do not interfere.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/brainwire/brainwire"
)

// Run runs the conformance suite. Each subtest calls open for a fresh,
// empty store; open owns the store's lifetime (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) brainwire.BlobStore) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s brainwire.BlobStore)
	}{
		{"RoundTrip", testRoundTrip},
		{"LargeBlob", testLargeBlob},
		{"ContentTypes", testContentTypes},
		{"PutReplaces", testPutReplaces},
		{"FailedPutStoresNothing", testFailedPut},
		{"CancelledPut", testCancelledPut},
		{"InvalidNames", testInvalidNames},
		{"ForeignURLs", testForeignURLs},
		{"Missing", testMissing},
		{"Concurrent", testConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

// put stores body under name, failing the test if it cannot.
func put(t *testing.T, s brainwire.BlobStore, name, contentType, body string) string {
	t.Helper()
	u, err := s.Put(t.Context(), name, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatalf("Put(%s): %v", name, err)
	}
	return u
}

// Read returns the content and info of the blob at u, failing the test if
// it cannot be read.
func Read(t *testing.T, s brainwire.BlobStore, u string) ([]byte, brainwire.BlobInfo) {
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

func checkCode(t *testing.T, what string, err error, want string) {
	t.Helper()
	if got := brainwire.ErrorCode(err); got != want {
		t.Errorf("%s: err = %v, want code %s", what, err, want)
	}
}

func testRoundTrip(t *testing.T, s brainwire.BlobStore) {
	ctx := t.Context()
	audio := []byte("RIFF....WAVEfmt pretend audio \x00\x01\x02\xff")

	u, err := s.Put(ctx, "capture-1.wav", "audio/wav", bytes.NewReader(audio))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(u, "/capture-1.wav") {
		t.Errorf("Put returned %q, want a URL ending in the name", u)
	}
	got, info := Read(t, s, u)
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
	_, _, err = s.Open(ctx, u)
	checkCode(t, "Open after Delete", err, brainwire.ENotFound)
	if err := s.Delete(ctx, u); err != nil {
		t.Errorf("second Delete: %v, want nil", err)
	}
}

// testLargeBlob stores more than a few MiB from a reader that hides its
// length, as a request body does: a backend that uploads in blocks stages
// several and commits them as one.
func testLargeBlob(t *testing.T, s brainwire.BlobStore) {
	ctx := t.Context()
	data := make([]byte, 3<<20+12345)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(data)

	u, err := s.Put(ctx, "long.ogg", "audio/ogg", io.MultiReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, info := Read(t, s, u)
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Errorf("read content differs (%d bytes, want %d)", len(got), len(data))
	}
	if info.Size != int64(len(data)) || info.ContentType != "audio/ogg" {
		t.Errorf("info = %+v", info)
	}
}

func testContentTypes(t *testing.T, s brainwire.BlobStore) {
	for name, ct := range map[string]string{
		"a.webm": "audio/webm;codecs=opus",
		"b.m4a":  "audio/mp4",
		"c.bin":  "",
	} {
		want := ct
		if want == "" {
			want = brainwire.DefaultBlobContentType
		}
		if _, info := Read(t, s, put(t, s, name, ct, "x")); info.ContentType != want {
			t.Errorf("%s: content type = %q, want %q", name, info.ContentType, want)
		}
	}
	_, err := s.Put(t.Context(), "d.wav", "audio/", strings.NewReader("x"))
	checkCode(t, "Put with a malformed content type", err, brainwire.EInvalid)
}

func testPutReplaces(t *testing.T, s brainwire.BlobStore) {
	u1 := put(t, s, "a.ogg", "audio/ogg", "first")
	u2 := put(t, s, "a.ogg", "audio/webm", "second, longer")
	if u1 != u2 {
		t.Errorf("URLs differ for one name: %q, %q", u1, u2)
	}
	got, info := Read(t, s, u2)
	if string(got) != "second, longer" || info.ContentType != "audio/webm" || info.Size != int64(len(got)) {
		t.Errorf("after replacing: %q %+v", got, info)
	}
}

// FailingReader yields n bytes, then fails like an upload cut off.
func FailingReader(n int) io.Reader {
	return io.MultiReader(strings.NewReader(strings.Repeat("z", n)), iotest.ErrReader(errors.New("connection reset")))
}

func testFailedPut(t *testing.T, s brainwire.BlobStore) {
	ctx := t.Context()
	kept := put(t, s, "kept.wav", "audio/wav", "old")
	// Past 2 MiB, so that a backend uploading in blocks fails after
	// staging some.
	if _, err := s.Put(ctx, "kept.wav", "audio/mpeg", FailingReader(2<<20+10)); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	if got, info := Read(t, s, kept); string(got) != "old" || info.ContentType != "audio/wav" {
		t.Errorf("after a failed replace: %q %+v, want the old blob", got, info)
	}

	if _, err := s.Put(ctx, "never.wav", "audio/wav", FailingReader(100)); err == nil {
		t.Fatal("Put from a failing reader succeeded")
	}
	_, _, err := s.Open(ctx, sibling(kept, "never.wav"))
	checkCode(t, "Open of a failed Put", err, brainwire.ENotFound)
}

func testCancelledPut(t *testing.T, s brainwire.BlobStore) {
	ctx, cancel := context.WithCancel(t.Context())
	// The context is cancelled once the upload has begun, as by a client
	// going away mid-upload.
	r := io.MultiReader(strings.NewReader("chunk"), CancelReader(cancel), strings.NewReader("rest"))
	_, err := s.Put(ctx, "c.wav", "audio/wav", r)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Put: err = %v, want context.Canceled", err)
	}
	u := put(t, s, "other.wav", "audio/wav", "x")
	_, _, err = s.Open(t.Context(), sibling(u, "c.wav"))
	checkCode(t, "Open of a cancelled Put", err, brainwire.ENotFound)
}

// CancelReader calls cancel on its first read, as a client going away
// mid-upload, and yields a few bytes.
func CancelReader(cancel context.CancelFunc) io.Reader { return &cancelReader{cancel: cancel} }

type cancelReader struct {
	cancel context.CancelFunc
	done   bool
}

func (r *cancelReader) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	r.cancel()
	r.done = true
	return copy(p, "more"), nil
}

func testInvalidNames(t *testing.T, s brainwire.BlobStore) {
	for _, name := range []string{
		"", ".", "..", "../x.wav", "a/../../x.wav", "/etc/passwd", "a/b.wav", `a\b.wav`,
		".hidden", ".x.wav.type", "a..b", "x.wav\x00", "sp ace.wav", "ü.wav", "-x.wav",
		"x?y", "x#y", "%2e%2e", strings.Repeat("a", brainwire.MaxBlobNameLen+1),
	} {
		_, err := s.Put(t.Context(), name, "audio/wav", strings.NewReader("x"))
		checkCode(t, fmt.Sprintf("Put(%q)", name), err, brainwire.EInvalid)
	}
	put(t, s, strings.Repeat("a", brainwire.MaxBlobNameLen), "audio/wav", "x")
}

// testForeignURLs tries URLs that are not of a blob in the store. Each
// backend adds its own (other directories, containers, hosts).
func testForeignURLs(t *testing.T, s brainwire.BlobStore) {
	mine := put(t, s, "mine.wav", "audio/wav", "mine")
	root := mine[:strings.LastIndex(mine, "/")]
	Refuses(t, s, []string{
		root,
		root + "/",
		root + "/sub/mine.wav",
		root + "/../mine.wav",
		root + "/%2e%2e/mine.wav",
		mine + "?x=1",
		mine + "#frag",
		"mine.wav",
		"",
		"%zz",
	})
	if got, _ := Read(t, s, mine); string(got) != "mine" {
		t.Errorf("own blob now holds %q", got)
	}
}

// Refuses checks that s refuses each of urls as not naming a blob of its
// own: EInvalid for Open and for Delete.
func Refuses(t *testing.T, s brainwire.BlobStore, urls []string) {
	t.Helper()
	for _, raw := range urls {
		_, _, err := s.Open(t.Context(), raw)
		checkCode(t, fmt.Sprintf("Open(%q)", raw), err, brainwire.EInvalid)
		checkCode(t, fmt.Sprintf("Delete(%q)", raw), s.Delete(t.Context(), raw), brainwire.EInvalid)
	}
}

func testMissing(t *testing.T, s brainwire.BlobStore) {
	u := sibling(put(t, s, "there.wav", "audio/wav", "x"), "never-put.wav")
	_, _, err := s.Open(t.Context(), u)
	checkCode(t, "Open of a missing blob", err, brainwire.ENotFound)
	if err := s.Delete(t.Context(), u); err != nil {
		t.Errorf("Delete of a missing blob: %v", err)
	}
}

func testConcurrent(t *testing.T, s brainwire.BlobStore) {
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("c%d.wav", i)
			body := strings.Repeat(fmt.Sprint(i), 10_000)
			u, err := s.Put(ctx, name, "audio/wav", strings.NewReader(body))
			if err != nil {
				t.Errorf("Put(%s): %v", name, err)
				return
			}
			rc, _, err := s.Open(ctx, u)
			if err != nil {
				t.Errorf("Open(%s): %v", name, err)
				return
			}
			defer rc.Close()
			if got, err := io.ReadAll(rc); err != nil || string(got) != body {
				t.Errorf("%s: read %d bytes, err %v", name, len(got), err)
			}
			if err := s.Delete(ctx, u); err != nil {
				t.Errorf("Delete(%s): %v", name, err)
			}
		})
	}
	wg.Wait()
}

// sibling is the URL of the blob name next to the blob at u.
func sibling(u, name string) string { return u[:strings.LastIndex(u, "/")+1] + name }
