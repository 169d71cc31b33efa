package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/capturev2"
)

// DefaultMaxAudioBytes is the upload limit: the transcription service's.
const DefaultMaxAudioBytes = brainwire.MaxAudioBytes

// voiceMessage asks the agent to transcribe before it classifies; the
// `audio:` line carries the URL the transcribe_audio tool accepts.
const voiceMessage = "This is a voice capture. Call transcribe_audio with the blob_url below, " +
	"then classify the transcript and file it with file_capture.\naudio: %s"

// handleVoice takes a multipart upload with a `file` part (the audio) and
// optional `thread_id` / `run_id` fields.
func (s *Server) handleVoice(w http.ResponseWriter, r *http.Request) {
	s.voice(w, r, func(brainwire.Capture) encoder { return capturev2.Encoder{} })
}

// voice runs a multipart voice upload's capture, streamed in the protocol
// newEncoder speaks.
func (s *Server) voice(w http.ResponseWriter, r *http.Request, newEncoder func(brainwire.Capture) encoder) {
	if s.cfg.Blobs == nil {
		writeError(w, errNoVoice)
		return
	}
	upload, err := s.readVoiceUpload(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	c, err := s.newCapture(r, brainwire.KindVoice, upload.threadID, upload.runID)
	if err != nil {
		writeError(w, err)
		return
	}
	s.runVoice(w, r, c, upload, newEncoder)
}

// errNoVoice answers voice captures on a server without audio storage.
var errNoVoice = brainwire.Errorf(brainwire.EUnavailable, "voice capture is not configured on this server")

// runVoice stores the audio for the length of capture c and runs it.
func (s *Server) runVoice(w http.ResponseWriter, r *http.Request, c brainwire.Capture, upload *voiceUpload, newEncoder func(brainwire.Capture) encoder) {
	blobName := "voice-" + s.cfg.NewID() + "." + upload.format
	url, err := s.cfg.Blobs.Put(r.Context(), blobName, upload.contentType, bytes.NewReader(upload.audio))
	if err != nil {
		s.log.Error("storing voice upload", "error", err)
		writeError(w, brainwire.Errorf(brainwire.EUnavailable, "the audio could not be stored"))
		return
	}
	// The audio lives only as long as its capture, whatever the outcome:
	// also when the client went away, hence a context of its own.
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
		defer cancel()
		if err := s.cfg.Blobs.Delete(ctx, url); err != nil {
			s.log.Error("deleting voice upload", "url", url, "error", err)
		}
	}()
	c.AudioURL = url
	s.runCapture(w, r, c, newEncoder(c))
}

type voiceUpload struct {
	audio       []byte // read whole, within the limit, so size is checked before streaming
	format      string // file extension the transcription service knows
	contentType string
	threadID    string
	runID       string
}

// readVoiceUpload reads the multipart form within the size limit and checks
// the audio's type, so every problem is a 4xx before the stream starts.
func (s *Server) readVoiceUpload(w http.ResponseWriter, r *http.Request) (*voiceUpload, error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "multipart/form-data" {
		return nil, &brainwire.Error{Code: errUnsupportedMedia, Message: "Content-Type must be multipart/form-data with a file part"}
	}
	limit := s.maxAudioBytes()
	// The form's own fields and boundaries need a little room past the audio.
	r.Body = http.MaxBytesReader(w, r.Body, limit+64<<10)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, brainwire.Errorf(brainwire.EInvalid, "malformed multipart body: %v", err)
	}
	up := &voiceUpload{}
	found := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, multipartError(err, limit)
		}
		switch part.FormName() {
		case "file":
			if found {
				return nil, brainwire.Errorf(brainwire.EInvalid, "only one file part is allowed")
			}
			found = true
			name, ctype, err := brainwire.AudioFormat(part.FileName(), part.Header.Get("Content-Type"))
			if err != nil {
				return nil, err
			}
			up.format = strings.TrimPrefix(path.Ext(name), ".")
			up.contentType = ctype
			up.audio, err = io.ReadAll(io.LimitReader(part, limit+1))
			if err != nil {
				return nil, multipartError(err, limit)
			}
			if int64(len(up.audio)) > limit {
				return nil, brainwire.Errorf(brainwire.ETooLarge, "audio is over %d bytes", limit)
			}
			if len(up.audio) == 0 {
				return nil, brainwire.Errorf(brainwire.EInvalid, "the file part is empty")
			}
		case "thread_id", "run_id":
			v, err := io.ReadAll(io.LimitReader(part, 256))
			if err != nil {
				return nil, multipartError(err, limit)
			}
			if part.FormName() == "thread_id" {
				up.threadID = string(v)
			} else {
				up.runID = string(v)
			}
		default:
			// Unknown fields are drained and ignored: older app builds
			// send extra metadata.
			if _, err := io.Copy(io.Discard, part); err != nil {
				return nil, multipartError(err, limit)
			}
		}
	}
	if !found {
		return nil, brainwire.Errorf(brainwire.EInvalid, "a file part with the audio is required")
	}
	return up, nil
}

func (s *Server) maxAudioBytes() int64 {
	if s.cfg.MaxAudioBytes > 0 {
		return s.cfg.MaxAudioBytes
	}
	return DefaultMaxAudioBytes
}

func multipartError(err error, limit int64) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return brainwire.Errorf(brainwire.ETooLarge, "upload is over %d bytes", limit)
	}
	return brainwire.Errorf(brainwire.EInvalid, "malformed multipart body: %v", err)
}
