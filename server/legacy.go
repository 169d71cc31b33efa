package server

import (
	"net/http"
	"strings"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/v1"
)

// The routes earlier builds of the phone app call, answered in the v1
// wire format (protocol/v1) by the same capture pipeline as capture-v2.
// Their bodies are taken as those builds send them: unknown fields are
// ignored, as the service they were written for ignored them.

func v1Encoder(c brainwire.Capture) encoder { return v1.NewEncoder(c) }

// legacyRunRequest is POST /api/ag-ui's body.
type legacyRunRequest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
}

// handleLegacyCapture captures the text of the last user message.
func (s *Server) handleLegacyCapture(w http.ResponseWriter, r *http.Request) {
	var req legacyRunRequest
	fp, err := s.decodeJSON(w, r, &req, false)
	if err != nil {
		writeError(w, err)
		return
	}
	var text string
	for _, m := range req.Messages {
		if m.Role == "user" || m.Role == "" {
			text = m.Content
		}
	}
	text = strings.TrimSpace(text)
	if text == "" {
		writeError(w, brainwire.Errorf(brainwire.EInvalid, "messages has no user message with content"))
		return
	}
	s.runText(w, r, text, req.ThreadID, req.RunID, fp, v1Encoder)
}

// handleLegacyFollowUp is /api/capture/follow-up for those builds. A
// missing follow_up_round is round 1, as it was for them.
func (s *Server) handleLegacyFollowUp(w http.ResponseWriter, r *http.Request) {
	var req followUpRequest
	fp, err := s.decodeJSON(w, r, &req, false)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.FollowUpRound == 0 {
		req.FollowUpRound = 1
	}
	s.runFollowUp(w, r, req, fp, v1Encoder)
}

// handleLegacyVoice is /api/capture/voice for those builds.
func (s *Server) handleLegacyVoice(w http.ResponseWriter, r *http.Request) {
	s.voice(w, r, v1Encoder)
}

// legacyRespondRequest is POST /api/ag-ui/respond's body: the bucket the
// person picked for a capture the agent was not sure of.
type legacyRespondRequest struct {
	ThreadID    string `json:"thread_id"`
	Response    string `json:"response"`
	InboxItemID string `json:"inbox_item_id"`
}

// handleLegacyRespond files the item into the bucket the person picked, as
// PATCH /api/inbox/{id}/recategorize does, then streams the result the way
// those builds show a filing: the text "Filed → <bucket>" and CLASSIFIED.
// Nothing runs the agent. Every problem, the store's included, is a JSON
// error before the stream starts.
func (s *Server) handleLegacyRespond(w http.ResponseWriter, r *http.Request) {
	var req legacyRespondRequest
	if _, err := s.decodeJSON(w, r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	if err := inboxItemIDError(req.InboxItemID); err != nil {
		writeError(w, err)
		return
	}
	if !brainwire.ValidBucket(req.Response) {
		writeError(w, brainwire.Errorf(brainwire.EInvalid, "response must be one of People, Projects, Ideas, Admin"))
		return
	}
	c, err := s.newCapture(r, brainwire.KindText, req.ThreadID, "")
	if err != nil {
		writeError(w, err)
		return
	}
	item, err := s.cfg.Store.Recategorize(r.Context(), c.UserID, req.InboxItemID, req.Response, s.cfg.NewID(), ClassifiedByUser, s.cfg.Now())
	if err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("bucket picked", "inbox_item_id", item.ID, "bucket", req.Response, "thread_id", c.ThreadID, "user", c.UserID)
	stream := startStream(w, s.cfg.KeepAlive)
	defer stream.close()
	_ = stream.write(v1.Recategorized(nil, c.ThreadID, c.RunID, item.ID, req.Response))
}
