package server

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/capturev2"
)

// MaxFollowUpRounds bounds the clarifying conversation on one capture.
const MaxFollowUpRounds = 3

type followUpRequest struct {
	InboxItemID   string `json:"inbox_item_id"`
	FollowUpText  string `json:"follow_up_text"`
	FollowUpRound int    `json:"follow_up_round"`
	ThreadID      string `json:"thread_id"`
	RunID         string `json:"run_id"`
}

// followUpInstructions tell the agent, for this run only, what the new
// message is: the answer to its own question, to be filed on the same item.
const followUpInstructions = "The person is answering the clarifying question you asked about " +
	"their capture (follow-up round %d of %d). Classify the capture again using their answer " +
	"and call file_capture once. If it is still unclear, mark it misunderstood with a new question."

// handleFollowUp continues the agent's run on the Foundry thread stored on a
// misunderstood inbox item and files the result onto that same item.
func (s *Server) handleFollowUp(w http.ResponseWriter, r *http.Request) {
	var req followUpRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	c, err := s.followUpCapture(r, req)
	if err != nil {
		writeError(w, err)
		return
	}
	s.runCapture(w, r, c, capturev2.Encoder{})
}

// followUpCapture checks a follow-up and the inbox item it answers, and
// returns its capture. Every protocol's follow-up goes through it.
func (s *Server) followUpCapture(r *http.Request, req followUpRequest) (brainwire.Capture, error) {
	text := strings.TrimSpace(req.FollowUpText)
	switch {
	case !validID(req.InboxItemID):
		return brainwire.Capture{}, brainwire.Errorf(brainwire.EInvalid, "inbox_item_id is required")
	case text == "":
		return brainwire.Capture{}, brainwire.Errorf(brainwire.EInvalid, "follow_up_text is required")
	case utf8.RuneCountInString(text) > s.cfg.MaxTextLength:
		return brainwire.Capture{}, brainwire.Errorf(brainwire.ETooLarge, "follow_up_text is over %d characters", s.cfg.MaxTextLength)
	case req.FollowUpRound < 1 || req.FollowUpRound > MaxFollowUpRounds:
		return brainwire.Capture{}, brainwire.Errorf(brainwire.EInvalid, "follow_up_round must be 1 to %d", MaxFollowUpRounds)
	}
	user := userFrom(r.Context())
	item, err := s.cfg.Store.GetInboxItem(r.Context(), user, req.InboxItemID)
	if err != nil {
		return brainwire.Capture{}, err
	}
	if item.Status != brainwire.StatusMisunderstood {
		return brainwire.Capture{}, brainwire.Errorf(brainwire.EConflict, "inbox item %s is %s, not misunderstood: there is nothing to follow up", item.ID, item.Status)
	}
	if item.FoundryThreadID == "" {
		return brainwire.Capture{}, brainwire.Errorf(brainwire.EConflict, "inbox item %s has no agent conversation to continue", item.ID)
	}
	// Rounds go in order, so a retried or stale request cannot skip ahead
	// or run past the limit.
	if next := item.FollowUpRounds + 1; req.FollowUpRound != next {
		if next > MaxFollowUpRounds {
			return brainwire.Capture{}, brainwire.Errorf(brainwire.EConflict, "inbox item %s has had all %d follow-up rounds", item.ID, MaxFollowUpRounds)
		}
		return brainwire.Capture{}, brainwire.Errorf(brainwire.EConflict, "inbox item %s expects follow-up round %d, not %d", item.ID, next, req.FollowUpRound)
	}
	c, err := s.newCapture(r, brainwire.KindFollowUp, req.ThreadID, req.RunID)
	if err != nil {
		return brainwire.Capture{}, err
	}
	c.Text = text
	c.FollowUp = &brainwire.FollowUp{Item: item, Round: req.FollowUpRound}
	return c, nil
}

// validID accepts the ids this server and its stores hand out.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r < 0x21 || r == 0x7f || r == '/' || r == '\\' || r == '?' || r == '#' {
			return false
		}
	}
	return true
}
