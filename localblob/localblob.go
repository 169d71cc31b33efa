// Package localblob keeps uploaded audio in a local directory: the blob store
// of a machine with no cloud storage configured.
//
// Blobs are flat files in one directory, addressed by file:// URLs. Each blob
// has a hidden sidecar file holding its content type. Valid blob names never
// start with a dot, so sidecars and temporary files can never collide with a
// blob.
package localblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
)

// Store is a brainwire.BlobStore on one local directory. It is safe for
// concurrent use; concurrent Puts of one name leave one of them whole.
type Store struct {
	root string // absolute and clean
}

var _ brainwire.BlobStore = (*Store)(nil)

// New returns a Store keeping blobs in dir, creating it (owner-only) when it
// does not exist.
func New(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("localblob: no directory given")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localblob: resolving %q: %w", dir, err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("localblob: creating %s: %w", root, err)
	}
	return &Store{root: root}, nil
}

// Dir returns the directory the blobs are kept in.
func (s *Store) Dir() string { return s.root }

// Put stores the audio read from r under name and returns its file:// URL.
// The blob appears whole or not at all: an earlier blob of the same name is
// replaced only once the new content is completely on disk.
func (s *Store) Put(ctx context.Context, name, contentType string, r io.Reader) (string, error) {
	contentType, err := brainwire.CheckBlobPut(name, contentType)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("localblob: storing %s: %w", name, err)
	}

	// The content goes to a temporary file first so that a failed or
	// cancelled upload never replaces what is there.
	tmp, err := s.writeTemp(ctx, r)
	if err != nil {
		return "", fmt.Errorf("localblob: storing %s: %w", name, err)
	}
	defer os.Remove(tmp) // no-op once renamed

	// The sidecar is in place before the blob, so a visible blob always has one.
	meta, err := s.writeTemp(ctx, strings.NewReader(contentType))
	if err != nil {
		return "", fmt.Errorf("localblob: storing content type of %s: %w", name, err)
	}
	if err := os.Rename(meta, s.path(sidecarName(name))); err != nil {
		os.Remove(meta)
		return "", fmt.Errorf("localblob: storing content type of %s: %w", name, err)
	}
	if err := os.Rename(tmp, s.path(name)); err != nil {
		return "", fmt.Errorf("localblob: storing %s: %w", name, err)
	}
	return s.url(name), nil
}

// Open returns the blob at rawURL, which must be a URL Put returned.
func (s *Store) Open(ctx context.Context, rawURL string) (io.ReadCloser, brainwire.BlobInfo, error) {
	name, err := s.nameOf(rawURL)
	if err != nil {
		return nil, brainwire.BlobInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, brainwire.BlobInfo{}, fmt.Errorf("localblob: opening %s: %w", name, err)
	}
	f, err := os.Open(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, brainwire.BlobInfo{}, brainwire.Errorf(brainwire.ENotFound, "audio %s not found", name)
	}
	if err != nil {
		return nil, brainwire.BlobInfo{}, fmt.Errorf("localblob: opening %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, brainwire.BlobInfo{}, fmt.Errorf("localblob: opening %s: %w", name, err)
	}
	ct, err := s.contentType(name)
	if err != nil {
		f.Close()
		return nil, brainwire.BlobInfo{}, fmt.Errorf("localblob: reading content type of %s: %w", name, err)
	}
	return f, brainwire.BlobInfo{Name: name, ContentType: ct, Size: st.Size()}, nil
}

// Delete removes the blob at rawURL; a missing blob is not an error.
func (s *Store) Delete(ctx context.Context, rawURL string) error {
	name, err := s.nameOf(rawURL)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("localblob: deleting %s: %w", name, err)
	}
	// The blob goes first so that no blob is ever left without its sidecar.
	for _, file := range []string{name, sidecarName(name)} {
		if err := os.Remove(s.path(file)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("localblob: deleting %s: %w", name, err)
		}
	}
	return nil
}

// Sweep removes what captures that never finished left in the directory:
// blobs, sidecars without their blob and temporary files last modified
// before cutoff. A process killed during a voice capture (kill -9, a
// crash, a lost machine) never ran its Delete; the next one sweeps.
//
// Replicas may share the directory, and a capture of another process may
// still own a file: cutoff must be older than the longest a capture can
// keep its audio (the upload, then the agent run). A blob's modification
// time is when its upload finished; a temporary file's moves on with
// every write of the upload. Sweep returns how many blobs it removed
// (temporary files and stray sidecars are not counted) and the first
// error it met; it goes on past errors.
func (s *Store) Sweep(ctx context.Context, cutoff time.Time) (int, error) {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return 0, fmt.Errorf("localblob: sweeping %s: %w", s.root, err)
	}
	var first error
	keep := func(err error) {
		if err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = fmt.Errorf("localblob: sweeping %s: %w", s.root, err)
		}
	}
	old := func(e fs.DirEntry) bool {
		info, err := e.Info()
		if err != nil {
			keep(err)
			return false
		}
		return info.Mode().IsRegular() && info.ModTime().Before(cutoff)
	}
	removed := 0
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			keep(err)
			break
		}
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".tmp-"):
			if old(e) {
				keep(os.Remove(s.path(name)))
			}
		case strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".type"):
			// A sidecar goes with its blob; alone, it is what a crash
			// between the two renames of a Put left.
			blob := strings.TrimSuffix(strings.TrimPrefix(name, "."), ".type")
			if _, err := os.Lstat(s.path(blob)); errors.Is(err, fs.ErrNotExist) && old(e) {
				keep(os.Remove(s.path(name)))
			}
		case brainwire.ValidBlobName(name) == nil:
			if !old(e) {
				continue
			}
			// The blob first, as Delete does.
			err := os.Remove(s.path(name))
			keep(err)
			if err == nil {
				removed++
				keep(os.Remove(s.path(sidecarName(name))))
			}
		}
	}
	return removed, first
}

// writeTemp copies r into a new hidden file in the store's directory (so the
// rename into place stays on one file system) and syncs it to disk.
func (s *Store) writeTemp(ctx context.Context, r io.Reader) (path string, err error) {
	f, err := os.CreateTemp(s.root, ".tmp-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := io.Copy(f, ctxReader{ctx, r}); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// contentType reads name's sidecar. A blob without one (put there by hand)
// gets the type its extension suggests.
func (s *Store) contentType(name string) (string, error) {
	b, err := os.ReadFile(s.path(sidecarName(name)))
	if errors.Is(err, fs.ErrNotExist) {
		if ct := mime.TypeByExtension(filepath.Ext(name)); ct != "" {
			return ct, nil
		}
		return brainwire.DefaultBlobContentType, nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func (s *Store) path(file string) string { return filepath.Join(s.root, file) }

func (s *Store) url(name string) string {
	p := filepath.ToSlash(s.path(name))
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path: file:///C:/...
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// nameOf returns the blob name rawURL points at, or EInvalid when it is not a
// URL of a blob in this store.
func (s *Store) nameOf(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "file" || u.Opaque != "" ||
		(u.Host != "" && u.Host != "localhost") || u.RawQuery != "" || u.Fragment != "" {
		return "", brainwire.Errorf(brainwire.EInvalid, "not a URL of the local audio store: %q", rawURL)
	}
	p := u.Path
	if len(p) > 1 && filepath.VolumeName(p[1:]) != "" {
		p = p[1:]
	}
	p = filepath.Clean(filepath.FromSlash(p))
	if filepath.Dir(p) != s.root {
		return "", brainwire.Errorf(brainwire.EInvalid, "URL is outside the local audio store: %q", rawURL)
	}
	name := filepath.Base(p)
	if err := brainwire.ValidBlobName(name); err != nil {
		return "", err
	}
	return name, nil
}

func sidecarName(name string) string { return "." + name + ".type" }

// ctxReader stops a copy once its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Kind names the backend in health reports.
func (s *Store) Kind() string { return "local_directory" }
