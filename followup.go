package brainwire

import "time"

// MaxFollowUpRounds bounds the clarifying conversation on one capture.
const MaxFollowUpRounds = 3

// FollowUpClaim reserves one follow-up round of a misunderstood item for
// one run. The store grants a round to one claim at a time, atomically, so
// that follow-ups racing on the same item — on one server or on several
// replicas — cannot all run the agent and refile the item: one gets the
// claim, the others are refused (EConflict) before anything starts.
//
// A claim ends when its run files onto the item (the filing carries the
// claim's token), when the run gives it back (ReleaseFollowUp), or when it
// lapses at Until: a replica that died mid-run does not lock the item
// forever.
type FollowUpClaim struct {
	Round int       // the follow_up_round it answers: the item's next
	Token string    // names the run holding it
	At    time.Time // when it was claimed
	Until time.Time // when it lapses
}

// heldAt reports whether c still stands at t.
func (c *FollowUpClaim) heldAt(t time.Time) bool { return c != nil && t.Before(c.Until) }

// Claim returns it claimed by c, or says why it cannot be: EInvalid for a
// malformed claim; EConflict when the item is not misunderstood, has no
// agent conversation to continue, c is not its next round, or another
// claim still stands.
func (it InboxItem) Claim(c FollowUpClaim) (InboxItem, error) {
	switch {
	case c.Token == "" || c.At.IsZero() || !c.Until.After(c.At):
		return InboxItem{}, Errorf(EInvalid, "a follow-up claim needs a token and a time span")
	case c.Round < 1 || c.Round > MaxFollowUpRounds:
		return InboxItem{}, Errorf(EInvalid, "follow_up_round must be 1 to %d", MaxFollowUpRounds)
	case it.Status != StatusMisunderstood:
		return InboxItem{}, Errorf(EConflict, "inbox item %s is %s, not misunderstood: there is nothing to follow up", it.ID, it.Status)
	case it.UpstreamThreadID == "":
		return InboxItem{}, Errorf(EConflict, "inbox item %s has no agent conversation to continue", it.ID)
	}
	// Rounds go in order, so a retried or stale request cannot skip ahead
	// or run past the limit.
	if next := it.FollowUpRounds + 1; c.Round != next {
		if next > MaxFollowUpRounds {
			return InboxItem{}, Errorf(EConflict, "inbox item %s has had all %d follow-up rounds", it.ID, MaxFollowUpRounds)
		}
		return InboxItem{}, Errorf(EConflict, "inbox item %s expects follow-up round %d, not %d", it.ID, next, c.Round)
	}
	if it.FollowUpClaim.heldAt(c.At) {
		return InboxItem{}, Errorf(EConflict, "follow-up round %d of inbox item %s is already being answered", it.FollowUpClaim.Round, it.ID)
	}
	it.FollowUpClaim = &c
	return it, nil
}

// Release returns it without the claim named token, and whether it held
// that claim.
func (it InboxItem) Release(token string) (InboxItem, bool) {
	if it.FollowUpClaim == nil || token == "" || it.FollowUpClaim.Token != token {
		return it, false
	}
	it.FollowUpClaim = nil
	return it, true
}

// CheckRefile says whether f may refile before, the item as it is stored
// now: EConflict when a follow-up claim other than f's stands on it, or
// when f answers a claim the item no longer holds (it lapsed and another
// run took the round, or the person recategorized the item meanwhile).
func (f Filing) CheckRefile(before InboxItem) error {
	held := before.FollowUpClaim
	switch {
	case f.ClaimToken != "" && (held == nil || held.Token != f.ClaimToken):
		return Errorf(EConflict, "inbox item %s is no longer waiting for this follow-up", before.ID)
	case f.ClaimToken == "" && held.heldAt(f.Now):
		return Errorf(EConflict, "inbox item %s is being followed up by another request", before.ID)
	}
	return nil
}
