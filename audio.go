package brainwire

import (
	"context"
	"io"
	"strings"
)

// BlobStore keeps uploaded audio for the length of its capture. Names are
// chosen by the caller; URLs are what the transcribe_audio tool is given.
type BlobStore interface {
	// Put stores the audio and returns the URL the tool will fetch it by.
	Put(ctx context.Context, name, contentType string, r io.Reader) (url string, err error)
	// Open returns the audio stored at url (as returned by Put).
	Open(ctx context.Context, url string) (io.ReadCloser, BlobInfo, error)
	// Delete removes the audio; deleting a missing blob is not an error.
	Delete(ctx context.Context, url string) error
}

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Name        string
	ContentType string
	Size        int64
}

// Transcriber turns speech into text.
type Transcriber interface {
	Transcribe(ctx context.Context, audio io.Reader, filename, contentType string) (string, error)
}

// MaxBlobNameLen bounds blob names.
const MaxBlobNameLen = 200

// ValidBlobName accepts names of ASCII letters, digits, '.', '_' and '-'
// that start with a letter or digit and contain no "..": one plain file on
// every file system and a URL path segment that needs no escaping, so a
// name valid on one blob store is valid on the others.
func ValidBlobName(name string) error {
	if name == "" || len(name) > MaxBlobNameLen {
		return Errorf(EInvalid, "blob name must be 1 to %d characters", MaxBlobNameLen)
	}
	alnum := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
	if !alnum(name[0]) || strings.Contains(name, "..") {
		return Errorf(EInvalid, "invalid blob name %q", name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return Errorf(EInvalid, "invalid blob name %q", name)
		}
	}
	return nil
}
