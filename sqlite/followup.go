package sqlite

import (
	"context"

	"github.com/brainwire/brainwire"
)

// ClaimFollowUp reserves a follow-up round in one write transaction.
// Write transactions take the database's write lock when they begin
// (BEGIN IMMEDIATE), so two claims, even from two processes on the same
// file, cannot both read the item unclaimed.
func (s *Store) ClaimFollowUp(ctx context.Context, userID, id string, c brainwire.FollowUpClaim) (_ brainwire.InboxItem, err error) {
	defer wrapErr(&err, "claiming follow-up round %d of %s", c.Round, id)
	if userID == "" {
		return brainwire.InboxItem{}, brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	if err := checkTime("claim time", c.At); err != nil {
		return brainwire.InboxItem{}, err
	}
	if err := checkTime("claim end", c.Until); err != nil {
		return brainwire.InboxItem{}, err
	}
	var item brainwire.InboxItem
	err = s.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		before, err := getItem(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		claimed, err := before.Claim(c)
		if err != nil {
			return err
		}
		item = stored(claimed)
		return updateItem(ctx, tx, item)
	})
	if err != nil {
		return brainwire.InboxItem{}, err
	}
	return item, nil
}

// ReleaseFollowUp drops the claim named token if the item still holds it.
func (s *Store) ReleaseFollowUp(ctx context.Context, userID, id, token string) (err error) {
	defer wrapErr(&err, "releasing the follow-up claim on %s", id)
	if userID == "" {
		return brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	return s.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		before, err := getItem(ctx, tx, userID, id)
		if brainwire.ErrorCode(err) == brainwire.ENotFound {
			return nil
		}
		if err != nil {
			return err
		}
		released, held := before.Release(token)
		if !held {
			return nil
		}
		return updateItem(ctx, tx, released)
	})
}
