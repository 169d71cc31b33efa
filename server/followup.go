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
	fp, err := s.decodeCapture(w, r, &req, true)
	if err != nil {
		writeError(w, err)
		return
	}
	s.runFollowUp(w, r, req, fp, func(brainwire.Capture) encoder { return capturev2.Encoder{} })
}

// runFollowUp checks a follow-up, claims its round and runs it, streaming
// in the encoder's protocol. Every protocol's follow-up goes through it.
// The request's Idempotency-Key, if any, is claimed before the round: a
// repeat of a follow-up that refiled its item replays it, where the round
// would refuse it.
func (s *Server) runFollowUp(w http.ResponseWriter, r *http.Request, req followUpRequest, fp *fingerprint, newEncoder func(brainwire.Capture) encoder) {
	c, err := s.followUpCapture(r, req)
	if err != nil {
		writeError(w, err)
		return
	}
	hold, ok := s.holdKey(w, r, c, fp, newEncoder)
	if !ok {
		return
	}
	defer hold.release(r.Context())
	if c, err = s.claimFollowUp(r, c, req.InboxItemID); err != nil {
		writeError(w, err)
		return
	}
	if hold != nil {
		hold.afterRound = true
	}
	res := s.runCapture(w, r, c, newEncoder(c), hold)
	if !res.Outcome.Filed() {
		// Nothing was filed: give the round back so the person can try
		// again, also when they went away (hence a context of its own).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 15*time.Second)
		defer cancel()
		if err := s.cfg.Store.ReleaseFollowUp(ctx, c.UserID, c.FollowUp.Item.ID, c.FollowUp.ClaimToken); err != nil {
			s.log.Error("releasing the follow-up claim", "inbox_item_id", c.FollowUp.Item.ID, "round", c.FollowUp.Round, "error", err)
		}
	}
	// After the round: a retry the key lets through finds it free.
	hold.settle(r.Context(), c, res)
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

// claimFollowUp claims the follow-up's round of item itemID in the store
// before anything runs: of concurrent follow-ups on the item, on this
// server or another replica, one gets it and the others a 409.
func (s *Server) claimFollowUp(r *http.Request, c brainwire.Capture, itemID string) (brainwire.Capture, error) {
	now := s.cfg.Now()
	claim := brainwire.FollowUpClaim{Round: c.FollowUp.Round, Token: uuid.NewString(), At: now,
		Until: now.Add(s.cfg.RunTimeout + followUpClaimGrace)}
	item, err := s.cfg.Store.ClaimFollowUp(r.Context(), c.UserID, itemID, claim)
	if err != nil {
		return brainwire.Capture{}, err
	}
	c.FollowUp = &brainwire.FollowUp{Item: item, Round: c.FollowUp.Round, ClaimToken: claim.Token}
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
