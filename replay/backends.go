package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"path"
	"regexp"
	"sync"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/recorder"
)

// StaticTranscriber answers every transcription with Text, or fails with
// Err: replay's stand-in for the transcription service, and record's when
// none is configured.
type StaticTranscriber struct {
	Text string
	Err  error
}

// Transcribe implements brainwire.Transcriber.
func (t StaticTranscriber) Transcribe(_ context.Context, audio io.Reader, _, _ string) (string, error) {
	_, _ = io.Copy(io.Discard, audio)
	return t.Text, t.Err
}

// recordedTranscriber returns a transcriber that answers what the
// fixture's transcribe_audio call got, or nil when the recording had no
// transcription service.
func recordedTranscriber(fx *recorder.Fixture) brainwire.Transcriber {
	for _, t := range fx.Tools {
		if t.Name != brainwire.ToolTranscribeAudio {
			continue
		}
		var out struct {
			Text    string `json:"text"`
			Code    string `json:"error"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(t.Output, &out); err != nil {
			return StaticTranscriber{Text: t.OutputText}
		}
		if !t.IsError {
			return StaticTranscriber{Text: out.Text}
		}
		switch out.Code {
		case "transcription_unavailable":
			return nil
		case "invalid_audio":
			return StaticTranscriber{Err: brainwire.Errorf(brainwire.EInvalid, "%s", out.Message)}
		}
		return StaticTranscriber{Err: brainwire.Errorf(brainwire.EUpstream, "%s", out.Message)}
	}
	return StaticTranscriber{}
}

// audioLine finds the audio URL the server put in a voice capture's message.
var audioLine = regexp.MustCompile(`audio: ([^"\s\\]+)`)

// recordedBlobURL returns the URL the recorded capture's audio had, so the
// replayed upload gets the same one (it is part of the agent's message
// and of the transcribe_audio call), or "" for a capture without audio.
func recordedBlobURL(fx *recorder.Fixture) string {
	for _, t := range fx.Tools {
		var args struct {
			BlobURL string `json:"blob_url"`
		}
		if t.Name == brainwire.ToolTranscribeAudio && json.Unmarshal(t.Arguments, &args) == nil && args.BlobURL != "" {
			return args.BlobURL
		}
	}
	if len(fx.Exchanges) > 0 {
		if m := audioLine.FindSubmatch(fx.Exchanges[0].Request.BodyBytes()); m != nil {
			return string(m[1])
		}
	}
	return ""
}

// memoryBlobStore keeps uploads in memory.
type memoryBlobStore struct {
	url   func(name string) string
	mu    sync.Mutex
	blobs map[string]memoryBlob
}

type memoryBlob struct {
	info brainwire.BlobInfo
	data []byte
}

// newMemoryBlobStore returns an in-memory blob store whose URL for a blob
// named name is url(name), or memory://audio/<name> when url is nil.
func newMemoryBlobStore(url func(name string) string) *memoryBlobStore {
	if url == nil {
		url = func(name string) string { return "memory://audio/" + name }
	}
	return &memoryBlobStore{url: url, blobs: map[string]memoryBlob{}}
}

// Put implements brainwire.BlobStore.
func (m *memoryBlobStore) Put(ctx context.Context, name, contentType string, r io.Reader) (string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", brainwire.Errorf(brainwire.EInvalid, "reading the upload: %v", err)
	}
	if contentType == "" {
		contentType = mime.TypeByExtension(path.Ext(name))
	}
	u := m.url(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blobs[u] = memoryBlob{info: brainwire.BlobInfo{Name: name, ContentType: contentType, Size: int64(len(b))}, data: b}
	return u, nil
}

// Open implements brainwire.BlobStore.
func (m *memoryBlobStore) Open(ctx context.Context, url string) (io.ReadCloser, brainwire.BlobInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[url]
	if !ok {
		return nil, brainwire.BlobInfo{}, brainwire.Errorf(brainwire.ENotFound, "no blob at %s", url)
	}
	return io.NopCloser(bytes.NewReader(b.data)), b.info, nil
}

// Delete implements brainwire.BlobStore.
func (m *memoryBlobStore) Delete(ctx context.Context, url string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.blobs, url)
	return nil
}
