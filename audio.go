package brainwire

import (
	"context"
	"io"
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
