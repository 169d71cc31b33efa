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
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/recorder"
)

// toolWait bounds how long a tool call waits for the calls recorded
// before it; a call the client never makes must not hang the replay.
const toolWait = 2 * time.Second

// orderTools returns a WrapTools hook that runs the tool calls of one
// requires_action in a fixed order: the provider runs them concurrently,
// so which of two file_capture calls files the capture is a race. Replay
// settles it the way the recording did: within a round, the calls that
// succeeded run first, in call order, then the others.
func orderTools(fx *recorder.Fixture) func(brainwire.ToolSet) brainwire.ToolSet {
	rounds := map[int][]recorder.ToolRun{}
	for _, t := range fx.Tools {
		rounds[t.Round] = append(rounds[t.Round], t)
	}
	before := map[string][]string{} // call id -> calls that go first
	for _, ts := range rounds {
		if len(ts) < 2 {
			continue
		}
		var order []string
		for _, t := range ts {
			if !t.IsError {
				order = append(order, t.CallID)
			}
		}
		for _, t := range ts {
			if t.IsError {
				order = append(order, t.CallID)
			}
		}
		for i, id := range order {
			before[id] = order[:i]
		}
	}
	return func(inner brainwire.ToolSet) brainwire.ToolSet {
		if len(before) == 0 {
			return inner
		}
		o := &orderedTools{ToolSet: inner, before: before, done: map[string]chan struct{}{}}
		for id := range before {
			o.done[id] = make(chan struct{})
		}
		return o
	}
}

type orderedTools struct {
	brainwire.ToolSet
	before map[string][]string
	done   map[string]chan struct{}
	mu     sync.Mutex
}

func (o *orderedTools) Call(ctx context.Context, call brainwire.ToolCall) brainwire.ToolResult {
	if wait, ok := o.before[call.ID]; ok {
		t := time.NewTimer(toolWait)
		defer t.Stop()
	waiting:
		for _, id := range wait {
			select {
			case <-o.done[id]:
			case <-t.C:
				break waiting
			case <-ctx.Done():
				break waiting
			}
		}
		defer o.finish(call.ID)
	}
	return o.ToolSet.Call(ctx, call)
}

func (o *orderedTools) finish(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case <-o.done[id]:
	default:
		close(o.done[id])
	}
}

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
