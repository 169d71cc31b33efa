package cosmos

import (
	"context"
	"net/http"
	"reflect"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/brainwire/brainwire"
)

var _ brainwire.ShadowStore = (*Store)(nil)

// RecordShadow keeps t on the item, replacing any trial it had
// (brainwire.ShadowStore), with the conditional replace ClaimFollowUp
// uses: a write that changed the item since it was read is kept, and the
// trial put on the item as that write left it.
func (s *Store) RecordShadow(ctx context.Context, userID, itemID string, t brainwire.ShadowTrial) error {
	if t.At.IsZero() {
		return brainwire.Errorf(brainwire.EInvalid, "missing shadow trial time")
	}
	for attempt := 1; ; attempt++ {
		d, etag, err := s.readItem(ctx, userID, itemID)
		if err != nil {
			return err
		}
		it := d.item()
		it.Shadow = &t
		err = s.replaceItem(ctx, it, etag)
		if err == nil {
			return nil
		}
		if statusOf(err) != http.StatusPreconditionFailed || attempt == maxClaimAttempts {
			return err
		}
	}
}

// replaceKeepingShadow replaces the item read as read (with etag) by item,
// unless the item changed since: then the replace fails as replaceItem's
// does, but for a change of its shadow trial alone, which is neither the
// person's word nor the agent's. item then takes the trial now kept and is
// written again. It returns the item as written.
func (s *Store) replaceKeepingShadow(ctx context.Context, item brainwire.InboxItem, read inboxDoc, etag azcore.ETag) (brainwire.InboxItem, error) {
	for attempt := 1; ; attempt++ {
		err := s.replaceItem(ctx, item, etag)
		if err == nil {
			return normalizeItem(item), nil
		}
		if statusOf(err) != http.StatusPreconditionFailed || attempt == maxClaimAttempts {
			return brainwire.InboxItem{}, err
		}
		now, nowTag, rerr := s.readItem(ctx, item.UserID, item.ID)
		if rerr != nil || !sameButShadow(now, read) {
			return brainwire.InboxItem{}, err
		}
		item.Shadow = now.item().Shadow
		read, etag = now, nowTag
	}
}

// sameButShadow reports whether a and b, two reads of an item, differ in
// their shadow trials at most.
func sameButShadow(a, b inboxDoc) bool {
	a.Shadow, b.Shadow, a.InboxItem.Shadow, b.InboxItem.Shadow = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}
