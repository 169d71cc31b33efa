package cosmos

import (
	"context"
	"net/http"

	"github.com/brainwire/brainwire"
)

// maxClaimAttempts bounds how often a claim, a release or a shadow trial's
// write is tried again when the item changed between its read and its
// conditional replace.
const maxClaimAttempts = 5

// ClaimFollowUp reserves a follow-up round with a conditional replace: the
// item is read with its ETag, checked, and replaced only if its ETag still
// matches. Of concurrent claims, on any number of replicas, one replace
// wins; the others see 412, read the item again and find it claimed.
func (s *Store) ClaimFollowUp(ctx context.Context, userID, id string, c brainwire.FollowUpClaim) (brainwire.InboxItem, error) {
	for attempt := 1; ; attempt++ {
		d, etag, err := s.readItem(ctx, userID, id)
		if err != nil {
			return brainwire.InboxItem{}, err
		}
		claimed, err := d.item().Claim(c)
		if err != nil {
			return brainwire.InboxItem{}, err
		}
		err = s.replaceItem(ctx, claimed, etag)
		if err == nil {
			return normalizeItem(claimed), nil
		}
		if statusOf(err) != http.StatusPreconditionFailed || attempt == maxClaimAttempts {
			return brainwire.InboxItem{}, err
		}
	}
}

// ReleaseFollowUp drops the claim named token if the item still holds it,
// with the same conditional replace as ClaimFollowUp.
func (s *Store) ReleaseFollowUp(ctx context.Context, userID, id, token string) error {
	for attempt := 1; ; attempt++ {
		d, etag, err := s.readItem(ctx, userID, id)
		if brainwire.ErrorCode(err) == brainwire.ENotFound {
			return nil
		}
		if err != nil {
			return err
		}
		released, held := d.item().Release(token)
		if !held {
			return nil
		}
		err = s.replaceItem(ctx, released, etag)
		if err == nil || statusOf(err) == http.StatusNotFound {
			return nil
		}
		if statusOf(err) != http.StatusPreconditionFailed || attempt == maxClaimAttempts {
			return err
		}
	}
}
