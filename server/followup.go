package server

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/capturev2"
)

// MaxFollowUpRounds bounds the clarifying conversation on one capture.
const MaxFollowUpRounds = brainwire.MaxFollowUpRounds

type followUpRequest struct {
	InboxItemID   string `json:"inbox_item_id"`
	FollowUpText  string `json:"follow_up_text"`
	FollowUpRound int    `json:"follow_up_round"`
	ThreadID      string `json:"thread_id"`
	RunID         string `json:"run_id"`
}

// handleFollowUp continues the agent's run on the Foundry thread stored on a
// misunderstood inbox item and files the result onto that same item.
func (s *Server) handleFollowUp(w http.ResponseWriter, r *http.Request) {
	var req followUpRequest
	fp, err := s.decodeJSON(w, r, &req, true)
	if err != nil {
		writeError(w, err)
		return
	}
	s.runFollowUp(w, r, req, fp, func(brainwire.Capture) encoder { return capturev2.Encoder{} })
}

// runFollowUp checks a follow-up and runs it, streaming in the encoder's
// protocol. Every protocol's follow-up goes through it.
func (s *Server) runFollowUp(w http.ResponseWriter, r *http.Request, req followUpRequest, fp *fingerprint, newEncoder func(brainwire.Capture) encoder) {
	c, err := s.followUpCapture(r, req)
	if err != nil {
		writeError(w, err)
		return
	}
	s.runCapture(w, r, fp.request(c), newEncoder)
}

// followUpCapture checks a follow-up and makes its capture, not yet
// holding its round.
func (s *Server) followUpCapture(r *http.Request, req followUpRequest) (brainwire.Capture, error) {
	if err := inboxItemIDError(req.InboxItemID); err != nil {
		return brainwire.Capture{}, err
	}
	text := strings.TrimSpace(req.FollowUpText)
	switch {
	case text == "":
		return brainwire.Capture{}, brainwire.Errorf(brainwire.EInvalid, "follow_up_text is required")
	case utf8.RuneCountInString(text) > s.cfg.MaxTextLength:
		return brainwire.Capture{}, brainwire.Errorf(brainwire.ETooLarge, "follow_up_text is over %d characters", s.cfg.MaxTextLength)
	case req.FollowUpRound < 1 || req.FollowUpRound > MaxFollowUpRounds:
		return brainwire.Capture{}, brainwire.Errorf(brainwire.EInvalid, "follow_up_round must be 1 to %d", MaxFollowUpRounds)
	}
	if err := brainwire.CheckText("follow_up_text", text); err != nil {
		return brainwire.Capture{}, err
	}
	c, err := s.newCapture(r, brainwire.KindFollowUp, req.ThreadID, req.RunID)
	if err != nil {
		return brainwire.Capture{}, err
	}
	c.Text = text
	c.FollowUp = &brainwire.FollowUp{Item: brainwire.InboxItem{ID: req.InboxItemID}, Round: req.FollowUpRound}
	return c, nil
}

// validID accepts the ids this server and its stores hand out: an id a
// client may choose (notIDRune, at most maxIDChars characters) without the
// characters that separate a URL's parts, so that it names one document.
func validID(id string) bool {
	return id != "" && utf8.RuneCountInString(id) <= maxIDChars &&
		!strings.ContainsFunc(id, func(r rune) bool { return notIDRune(r) || strings.ContainsRune(`/\?#`, r) })
}

// inboxItemIDError says what is wrong with a request's inbox_item_id, or
// nil when it may name an item.
func inboxItemIDError(id string) error {
	switch {
	case id == "":
		return brainwire.Errorf(brainwire.EInvalid, "inbox_item_id is required")
	case !validID(id):
		return brainwire.Errorf(brainwire.EInvalid, "inbox_item_id is not an inbox item id: at most %d printable characters without spaces, /, \\, ? or #", maxIDChars)
	}
	return nil
}
