package server

import (
	"encoding/base64"
	"net/http"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/agui"
)

// handleAGUI is the AG-UI 1.0 endpoint: a RunAgentInput in, the capture's
// AG-UI events out. The last user message is the capture: text, or audio
// sent inline as a voice capture; when the state holds a misunderstood
// capture a previous run reported, the message answers its question.
func (s *Server) handleAGUI(w http.ResponseWriter, r *http.Request) {
	body, err := readJSONBody(w, r, s.aguiBodyLimit())
	if err != nil {
		writeError(w, err)
		return
	}
	in, err := agui.ParseInput(body)
	if err != nil {
		writeError(w, err)
		return
	}
	fp := newFingerprint(r)
	fp.add(body)
	body = nil // the audio, if any, is decoded; let the rest go
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
		if err := brainwire.CheckText("text", in.Text); err != nil {
			writeError(w, err)
			return
		}
		if n := utf8.RuneCountInString(in.Text); n > s.cfg.MaxTextLength {
			writeError(w, brainwire.Errorf(brainwire.ETooLarge, "text is %d characters; the limit is %d", n, s.cfg.MaxTextLength))
			return
		}
		c, err := s.newCapture(r, brainwire.KindText, in.ThreadID, in.RunID)
		if err != nil {
			writeError(w, err)
			return
		}
		c.Text = in.Text
		s.runHeld(w, r, c, fp, newEncoder)
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
		limit += int64(base64.StdEncoding.EncodedLen(int(s.maxAudioBytes())))
	}
	return limit
}
