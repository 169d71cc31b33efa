package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/capturev2"
)

// DefaultMaxAudioBytes is the upload limit: the transcription service's.
const DefaultMaxAudioBytes = brainwire.MaxAudioBytes

// Defaults of the upload bounds in Config.
const (
	// DefaultMaxUploads bounds the voice uploads received at once. Each
	// holds a few blocks in memory on their way to the blob store, not
	// the file.
	DefaultMaxUploads = 8
	// DefaultUploadTimeout is how long a voice upload may take to arrive:
	// 25 MB at about 2 Mbit/s, a slow mobile link.
	DefaultUploadTimeout = 2 * time.Minute
)

// uploadRetryAfter is the Retry-After of a 503 for too many uploads: an
// upload slot frees when one of the uploads in flight has arrived.
const uploadRetryAfter = 5 * time.Second

// handleVoice takes a multipart upload with a `file` part (the audio) and
// optional `thread_id` / `run_id` fields.
func (s *Server) handleVoice(w http.ResponseWriter, r *http.Request) {
	s.voice(w, r, func(brainwire.Capture) encoder { return capturev2.Encoder{} })
}

// Answers to voice captures a server cannot take.
var (
	errNoVoice = brainwire.Errorf(brainwire.EUnavailable, "voice capture is not configured on this server")
	// The agent could only ever answer that it cannot hear the audio.
	errNoTranscription = brainwire.Errorf(brainwire.EUnavailable, "voice capture is not available: transcription is not configured on this server")
)

// voiceUnavailable says why voice captures cannot run here, or nil.
func (s *Server) voiceUnavailable() error {
	switch {
	case s.cfg.Blobs == nil:
		return errNoVoice
	case s.cfg.Transcriber == nil:
		return errNoTranscription
	}
	return nil
}

// voice runs a multipart voice upload's capture, streamed in the protocol
// newEncoder speaks. The audio streams from the request into the blob
// store as it arrives, so an upload holds a few blocks in memory, never the
// file; at most Config.MaxUploads are received at once, each within
// Config.UploadTimeout.
func (s *Server) voice(w http.ResponseWriter, r *http.Request, newEncoder func(brainwire.Capture) encoder) {
	if err := s.voiceUnavailable(); err != nil {
		writeError(w, err)
		return
	}
	select {
	case s.uploads <- struct{}{}:
	default:
		w.Header().Set("Retry-After", strconv.Itoa(int(uploadRetryAfter/time.Second)))
		writeError(w, &brainwire.Error{Code: errTooBusy, Message: "too many voice uploads at once; try again in a few seconds"})
		return
	}
	// The capture's ids are made before the upload is read, so that the
	// audio's blob name is made after them, as it always was; thread_id
	// and run_id fields, if the form has them, replace them.
	threadID, runID := "thread-"+s.cfg.NewID(), "run-"+s.cfg.NewID()
	up, err := s.receiveVoice(w, r)
	<-s.uploads
	if err != nil {
		writeError(w, err)
		return
	}
	// The audio lives only as long as its capture, whatever the outcome:
	// also when the client went away, hence a context of its own.
	defer s.deleteAudio(r.Context(), up.url)
	if up.threadID != "" {
		threadID = up.threadID
	}
	if up.runID != "" {
		runID = up.runID
	}
	c, err := s.newCapture(r, brainwire.KindVoice, threadID, runID)
	if err != nil {
		writeError(w, err)
		return
	}
	c.AudioURL = up.url
	// The upload is complete and stored: the key is claimed now, before
	// the agent transcribes anything.
	s.runCapture(w, r, up.fingerprint.request(c), newEncoder)
}

// runVoiceAudio stores audio that came whole in the request (AG-UI's
// inline audio, at most the upload limit, read from where the request's
// reading left it) for the length of capture c, once its leading bytes
// show it is of the format it claims, and runs it.
func (s *Server) runVoiceAudio(w http.ResponseWriter, r *http.Request, c brainwire.Capture, fp *fingerprint, audio *io.SectionReader, filename, mimeType string, newEncoder func(brainwire.Capture) encoder) {
	if err := s.voiceUnavailable(); err != nil {
		writeError(w, err)
		return
	}
	if limit := s.cfg.MaxAudioBytes; audio.Size() > limit {
		writeError(w, brainwire.Errorf(brainwire.ETooLarge, "audio is over %d bytes", limit))
		return
	}
	name, ctype, err := brainwire.AudioFormat(filename, mimeType)
	if err != nil {
		writeError(w, err)
		return
	}
	format := strings.TrimPrefix(path.Ext(name), ".")
	head := make([]byte, min(audio.Size(), brainwire.AudioHeadLen))
	if _, err := audio.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		s.log.Error("reading AG-UI inline audio", "error", err)
		writeError(w, brainwire.Errorf(brainwire.EUnavailable, "the audio could not be stored"))
		return
	}
	if !brainwire.IsAudio(format, head) {
		writeError(w, &brainwire.Error{Code: errUnsupportedMedia, Message: fmt.Sprintf("the audio is not %s audio: its first bytes do not match the format", strings.ToUpper(format))})
		return
	}
	// The audio came whole with the request: the key is claimed before
	// it is stored, and given back if it cannot be.
	var url string
	defer func() {
		if url != "" {
			s.deleteAudio(r.Context(), url)
		}
	}()
	store := func(ctx context.Context, c *brainwire.Capture) (err error) {
		url, err = s.cfg.Blobs.Put(ctx, "voice-"+s.cfg.NewID()+"."+format, ctype, io.NewSectionReader(audio, 0, audio.Size()))
		if err != nil {
			s.log.Error("storing voice upload", "error", err)
			return brainwire.Errorf(brainwire.EUnavailable, "the audio could not be stored")
		}
		c.AudioURL = url
		return nil
	}
	req := fp.request(c)
	req.Prepare = store
	s.runCapture(w, r, req, newEncoder)
}

func (s *Server) deleteAudio(ctx context.Context, url string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.cfg.Blobs.Delete(ctx, url); err != nil {
		s.log.Error("deleting voice upload", "url", url, "error", err)
	}
}

// voiceUpload is a received upload: the audio is in the blob store.
type voiceUpload struct {
	url      string
	threadID string
	runID    string
	// fingerprint is the upload's for its Idempotency-Key: its route,
	// audio and fields, not its multipart framing (a retry's boundary
	// differs); nil without a key.
	fingerprint *fingerprint
}

// receiveVoice reads the multipart form within its size limit and its
// deadline, streaming the file part into the blob store once its leading
// bytes show it is audio of the format it claims. Every problem is an
// error before the capture's stream starts; the audio is not left behind.
func (s *Server) receiveVoice(w http.ResponseWriter, r *http.Request) (_ *voiceUpload, err error) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "multipart/form-data" {
		return nil, &brainwire.Error{Code: errUnsupportedMedia, Message: "Content-Type must be multipart/form-data with a file part"}
	}
	// The whole upload must arrive in time; the stream that follows has
	// no read deadline (it only writes).
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(s.cfg.UploadTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return nil, fmt.Errorf("setting the upload deadline: %w", err)
	}
	defer func() {
		if err == nil {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			// The rest of the body is not read: the connection cannot
			// carry another request.
			w.Header().Set("Connection", "close")
		}
	}()

	limit := s.cfg.MaxAudioBytes
	// The form's own fields and boundaries need a little room past the audio.
	r.Body = http.MaxBytesReader(w, r.Body, limit+64<<10)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, brainwire.Errorf(brainwire.EInvalid, "malformed multipart body: %v", err)
	}
	up := &voiceUpload{}
	var audioSum hash.Hash
	if requestKey(r) != "" {
		audioSum = sha256.New()
	}
	defer func() {
		if err != nil && up.url != "" {
			s.deleteAudio(r.Context(), up.url)
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, uploadError(err, limit)
		}
		switch part.FormName() {
		case "file":
			if up.url != "" {
				return nil, brainwire.Errorf(brainwire.EInvalid, "only one file part is allowed")
			}
			if up.url, err = s.storeAudio(r.Context(), part, limit, audioSum); err != nil {
				return nil, err
			}
		case "thread_id", "run_id":
			v, err := io.ReadAll(io.LimitReader(part, 256))
			if err != nil {
				return nil, uploadError(err, limit)
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
				return nil, uploadError(err, limit)
			}
		}
	}
	if up.url == "" {
		return nil, brainwire.Errorf(brainwire.EInvalid, "a file part with the audio is required")
	}
	if up.fingerprint = newFingerprint(r); up.fingerprint != nil {
		up.fingerprint.add(audioSum.Sum(nil))
		up.fingerprint.add([]byte(up.threadID))
		up.fingerprint.add([]byte(up.runID))
	}
	return up, nil
}

// storeAudio checks the file part's format, by its name and type and then
// by its leading bytes, and streams it into the blob store.
// The audio is hashed into sum, when given, as it streams.
func (s *Server) storeAudio(ctx context.Context, part *multipart.Part, limit int64, sum hash.Hash) (string, error) {
	name, ctype, err := brainwire.AudioFormat(part.FileName(), part.Header.Get("Content-Type"))
	if err != nil {
		return "", err
	}
	format := strings.TrimPrefix(path.Ext(name), ".")
	var src io.Reader = part
	if sum != nil {
		sum.Write([]byte(format))
		src = io.TeeReader(part, sum)
	}
	body := &audioBody{r: src, limit: limit}
	head := make([]byte, brainwire.AudioHeadLen)
	n, _ := io.ReadFull(body, head)
	head = head[:n]
	switch {
	case body.err != nil:
		return "", uploadError(body.err, limit)
	case n == 0:
		return "", brainwire.Errorf(brainwire.EInvalid, "the file part is empty")
	case !brainwire.IsAudio(format, head):
		return "", &brainwire.Error{Code: errUnsupportedMedia,
			Message: fmt.Sprintf("the file is not %s audio: its first bytes do not match the format", strings.ToUpper(format))}
	}
	blobName := "voice-" + s.cfg.NewID() + "." + format
	url, err := s.cfg.Blobs.Put(ctx, blobName, ctype, io.MultiReader(bytes.NewReader(head), body))
	if err != nil {
		if body.err != nil {
			// The upload failed, not the store; the store kept nothing.
			return "", uploadError(body.err, limit)
		}
		s.log.Error("storing voice upload", "error", err)
		return "", brainwire.Errorf(brainwire.EUnavailable, "the audio could not be stored")
	}
	return url, nil
}

// errAudioTooLarge ends an upload's audio past its limit.
var errAudioTooLarge = errors.New("audio over the size limit")

// audioBody is the file part on its way to the blob store: it stops past
// the size limit, and remembers what went wrong reading it, so that a
// failed Put can be told apart from a failed upload.
type audioBody struct {
	r     io.Reader
	limit int64
	n     int64
	err   error // the first error other than io.EOF
}

func (b *audioBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	if b.n += int64(n); b.n > b.limit {
		err = errAudioTooLarge
	}
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

// uploadError says what went wrong reading the upload, without the
// connection's details.
func uploadError(err error, limit int64) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig), errors.Is(err, errAudioTooLarge):
		return brainwire.Errorf(brainwire.ETooLarge, "upload is over %d bytes", limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &brainwire.Error{Code: errRequestTimeout, Message: "the upload did not arrive in time"}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return brainwire.Errorf(brainwire.EInvalid, "malformed multipart body: it ends too early")
	}
	var perr *net.OpError
	if errors.As(err, &perr) {
		return brainwire.Errorf(brainwire.EInvalid, "the upload was interrupted")
	}
	return brainwire.Errorf(brainwire.EInvalid, "malformed multipart body: %v", err)
}
