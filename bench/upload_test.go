package bench

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/localblob"
	"github.com/brainwire/brainwire/replay"
	"github.com/brainwire/brainwire/server"
	"github.com/brainwire/brainwire/sqlite"
)

// failingAgent ends every run at once: the benchmark measures the upload.
type failingAgent struct{}

func (failingAgent) Name() string { return "bench" }
func (failingAgent) Start(context.Context, brainwire.RunRequest) (brainwire.Run, error) {
	return nil, brainwire.Errorf(brainwire.EUpstream, "not run in the benchmark")
}

type silentTranscriber struct{}

func (silentTranscriber) Transcribe(context.Context, io.Reader, string, string) (string, error) {
	return "", nil
}

// BenchmarkVoiceUpload posts a 25 MB WAV file (the upload limit) to
// /api/capture/voice, stored in a local directory. B/op is the heap the
// whole process allocates per upload, client included.
func BenchmarkVoiceUpload(b *testing.B) {
	dir := b.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	blobs, err := localblob.New(filepath.Join(dir, "audio"))
	if err != nil {
		b.Fatal(err)
	}
	const key = "bench-key-0123456789"
	s, err := server.New(server.Config{Keys: server.Keys{key: "bench"}, Provider: failingAgent{}, Store: st,
		Blobs: blobs, Transcriber: silentTranscriber{}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "note.wav")
	fw.Write(replay.SilentWAV((brainwire.MaxAudioBytes - 44) / 2))
	mw.Close()
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/capture/voice", bytes.NewReader(body.Bytes()))
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
