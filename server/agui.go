package server

import (
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/agui"
)

// handleAGUI is the AG-UI 1.0 endpoint: a RunAgentInput in, the capture's
// AG-UI events out. The last user message is the capture: text, or audio
// sent inline as a voice capture; when the state holds a misunderstood
// capture a previous run reported, the message answers its question.
func (s *Server) handleAGUI(w http.ResponseWriter, r *http.Request) {
	fp := newFingerprint(r)
	in, spool, err := s.readAGUIInput(w, r, fp)
	if spool != nil {
		defer spool.close(s.log)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	newEncoder := func(c brainwire.Capture) encoder { return agui.NewEncoder(c, in.Options) }
	switch {
	case in.FollowUp != nil:
		if in.FollowUp.Round > MaxFollowUpRounds {
			writeError(w, brainwire.Errorf(brainwire.EConflict, "inbox item %s has had all %d follow-up rounds", in.FollowUp.InboxItemID, MaxFollowUpRounds))
			return
		}
		s.runFollowUp(w, r, followUpRequest{
			InboxItemID: in.FollowUp.InboxItemID, FollowUpText: in.Text, FollowUpRound: in.FollowUp.Round,
			ThreadID: in.ThreadID, RunID: in.RunID,
		}, fp, newEncoder)
	case in.Audio != nil:
		c, err := s.newCapture(r, brainwire.KindVoice, in.ThreadID, in.RunID)
		if err != nil {
			writeError(w, err)
			return
		}
		s.runVoiceAudio(w, r, c, fp, in.Audio.Data, in.Audio.Filename, in.Audio.MimeType, newEncoder)
	default:
		s.runText(w, r, in.Text, in.ThreadID, in.RunID, fp, newEncoder)
	}
}

// readAGUIInput reads a RunAgentInput as it arrives (into fp too, when
// not nil), from jsonBody as decodeJSON reads the other routes' bodies,
// with the same answers (415, 413, 408, 400). Its inline audio is decoded as it arrives
// into a file when the server takes voice captures, so that a body of
// tens of megabytes holds a few buffers, not the body; otherwise the body
// is held to the conversation's limit and its audio, refused anyway, is
// decoded in memory. The spool, when not nil, is the caller's to close.
func (s *Server) readAGUIInput(w http.ResponseWriter, r *http.Request, fp *fingerprint) (agui.Input, *fileSpool, error) {
	body, err := jsonBody(w, r, s.aguiBodyLimit())
	if err != nil {
		return agui.Input{}, nil, err
	}
	lim := agui.Limits{JSON: max(s.cfg.MaxBodyBytes, aguiConversationBytes), Audio: s.cfg.MaxAudioBytes}
	var spool agui.Spool = &agui.MemSpool{}
	var file *fileSpool
	if s.voiceUnavailable() == nil {
		file = &fileSpool{}
		spool = file
	}
	if fp != nil {
		body = io.TeeReader(body, fp) // the body as sent, for its Idempotency-Key
	}
	in, err := agui.ReadInput(body, spool, lim)
	var readErr *agui.ReadError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return agui.Input{}, file, bodyError(tooBig)
	case errors.As(err, &readErr):
		return agui.Input{}, file, bodyError(readErr.Err)
	case err != nil && brainwire.ErrorCode(err) == brainwire.EInternal:
		s.log.Error("spooling AG-UI inline audio", "error", err)
		return agui.Input{}, file, brainwire.Errorf(brainwire.EUnavailable, "the audio could not be stored")
	}
	return in, file, err
}

// fileSpool is an agui.Spool in a temporary file, made at the first
// audio byte: a text capture makes no file.
type fileSpool struct {
	f        *os.File
	unlinked bool // removed from its directory while open
}

func (f *fileSpool) Write(p []byte) (int, error) {
	if f.f == nil {
		var err error
		if f.f, err = os.CreateTemp("", "brainwire-agui-audio-*"); err != nil {
			return 0, err
		}
		// Removed at once where the system keeps an open file's data (as
		// Unix does), so that a server killed mid-capture leaves nothing
		// behind; elsewhere close removes it.
		f.unlinked = os.Remove(f.f.Name()) == nil
	}
	return f.f.Write(p)
}

func (f *fileSpool) ReadAt(p []byte, off int64) (int, error) {
	if f.f == nil {
		return 0, io.EOF
	}
	return f.f.ReadAt(p, off)
}

func (f *fileSpool) close(log *slog.Logger) {
	if f.f == nil {
		return
	}
	f.f.Close()
	if f.unlinked {
		return
	}
	if err := os.Remove(f.f.Name()); err != nil {
		log.Error("removing AG-UI inline audio", "error", err)
	}
}

// aguiConversationBytes is what a RunAgentInput may take at least: AG-UI
// clients send the whole conversation with every run, so a thread that has
// filed a few captures (reasoning included) outgrows a capture's body.
const aguiConversationBytes = 1 << 20

// aguiBodyLimit bounds a RunAgentInput: the conversation, with room for
// audio up to the voice limit in base64 only when this server can take
// voice captures (a blob store and a transcriber); otherwise inline audio
// is refused anyway and the body is held to the conversation's limit. The
// capture itself is held to the text limit like any other.
func (s *Server) aguiBodyLimit() int64 {
	limit := max(s.cfg.MaxBodyBytes, aguiConversationBytes)
	if s.voiceUnavailable() == nil {
		limit += int64(base64.StdEncoding.EncodedLen(int(s.cfg.MaxAudioBytes)))
	}
	return limit
}
