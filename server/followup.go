package server

import (
	"context"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/protocol/capturev2"
)

// MaxFollowUpRounds bounds the clarifying conversation on one capture.
const MaxFollowUpRounds = brainwire.MaxFollowUpRounds

// followUpClaimGrace is how long a follow-up's claim on its round outlives
// the run timeout: time to file and to give the claim back. Only a server
// that died mid-run leaves a claim to lapse.
const followUpClaimGrace = 30 * time.Second

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
	s.runFollowUp(w, r, req, func(brainwire.Capture) encoder { return capturev2.Encoder{} })
}

// runFollowUp checks a follow-up, claims its round and runs it, streaming
// in the encoder's protocol. Every protocol's follow-up goes through it.
func (s *Server) runFollowUp(w http.ResponseWriter, r *http.Request, req followUpRequest, newEncoder func(brainwire.Capture) encoder) {
	c, err := s.followUpCapture(r, req)
	if err != nil {
		writeError(w, err)
		return
	}
	if res := s.runCapture(w, r, c, newEncoder(c)); !res.Outcome.Filed() {
		// Nothing was filed: give the round back so the person can try
		// again, also when they went away (hence a context of its own).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 15*time.Second)
		defer cancel()
		if err := s.cfg.Store.ReleaseFollowUp(ctx, c.UserID, c.FollowUp.Item.ID, c.FollowUp.ClaimToken); err != nil {
			s.log.Error("releasing the follow-up claim", "inbox_item_id", c.FollowUp.Item.ID, "round", c.FollowUp.Round, "error", err)
		}
	}
}

// followUpCapture checks a follow-up and claims its round in the store
// before anything runs: of concurrent follow-ups on the item, on this
// server or another replica, one gets it and the others a 409.
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
	if err := brainwire.CheckText("follow_up_text", text); err != nil {
		return brainwire.Capture{}, err
	}
	c, err := s.newCapture(r, brainwire.KindFollowUp, req.ThreadID, req.RunID)
	if err != nil {
		return brainwire.Capture{}, err
	}
	now := s.cfg.Now()
	claim := brainwire.FollowUpClaim{Round: req.FollowUpRound, Token: uuid.NewString(), At: now,
		Until: now.Add(s.cfg.RunTimeout + followUpClaimGrace)}
	item, err := s.cfg.Store.ClaimFollowUp(r.Context(), c.UserID, req.InboxItemID, claim)
	if err != nil {
		return brainwire.Capture{}, err
	}
	c.Text = text
	c.FollowUp = &brainwire.FollowUp{Item: item, Round: req.FollowUpRound, ClaimToken: claim.Token}
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
