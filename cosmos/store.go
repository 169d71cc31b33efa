package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
)

// File stores a file_capture outcome.
//
// A new capture writes its bucket record first and its Inbox item second;
// if the Inbox write fails the record is deleted again, so a capture is
// either fully filed or absent. A refile (f.InboxItemID set) creates the
// new bucket record, replaces the item only if it is unchanged since it was
// read, deletes the new record if that fails, and only then deletes the
// item's previous record.
//
// The filing's Idempotency-Key (f.Key) lives in another container, which
// no transaction spans: the filing is refused (ErrKeyTakenOver) when the
// key is no longer its run's as it starts, the item records the key
// (FiledUnder), and the key is settled once the item is written. A
// process that dies in between leaves the key running; the claim that
// takes it over finds the item, and a run that lost its key in between
// finds the item id taken (the claims of one request share it).
func (s *Store) File(ctx context.Context, f brainwire.Filing) (brainwire.InboxItem, error) {
	if err := validateFiling(f); err != nil {
		return brainwire.InboxItem{}, err
	}
	var keyTag azcore.ETag // the claim's document, as the filing starts
	if f.Key != nil {
		old, etag, err := s.readKey(ctx, f.UserID, f.Key.Key)
		switch {
		case brainwire.ErrorCode(err) == brainwire.ENotFound, err == nil && (old.Token != f.Key.Token || old.State != brainwire.KeyRunning):
			return brainwire.InboxItem{}, brainwire.ErrKeyTakenOver
		case err != nil:
			return brainwire.InboxItem{}, err
		}
		keyTag = etag
	}
	var item brainwire.InboxItem
	var err error
	if f.InboxItemID != "" {
		item, err = s.refile(ctx, f)
	} else {
		item, err = s.fileNew(ctx, f)
	}
	if err == nil && f.Key != nil {
		s.settleKey(ctx, *f.Key, keyTag)
	}
	return item, err
}

// fileNew files f as a new Inbox item.
func (s *Store) fileNew(ctx context.Context, f brainwire.Filing) (brainwire.InboxItem, error) {
	if f.Key != nil && f.Key.TookOver {
		if err := s.afterTakeover(ctx, f); err != nil {
			return brainwire.InboxItem{}, err
		}
	}
	item := f.NewItem()
	undo, err := s.createRecord(ctx, item, f.Now)
	if f.Key != nil && statusOf(err) == http.StatusConflict {
		// The record's id is the capture's: a run of the same request
		// wrote it and died before the item.
		if err := s.afterTakeover(ctx, f); err != nil {
			return brainwire.InboxItem{}, err
		}
		undo, err = s.createRecord(ctx, item, f.Now)
	}
	if err != nil {
		return brainwire.InboxItem{}, err
	}
	if err := s.create(ctx, s.inbox, f.UserID, toInboxDoc(item), "inbox item "+item.ID, "inbox item"); err != nil {
		if f.Key != nil && s.filedAfterAll(ctx, item) {
			// The item is there, filed under the key: the write's answer
			// was lost (the client sent it again and met it), or another
			// run of the request wrote it. Its record stays.
			return brainwire.InboxItem{}, err
		}
		return brainwire.InboxItem{}, undo(err)
	}
	return normalizeItem(item), nil
}

// filedAfterAll reports whether want, an item a keyed filing failed to
// write, is in the store all the same, filed under that key and linked to
// the record the filing wrote (every run of the request writes the same
// ids). When it cannot tell, it says so too: a record left alone is
// cleared by the next run of the request (afterTakeover); a record taken
// from a filed item is lost for good.
func (s *Store) filedAfterAll(ctx context.Context, want brainwire.InboxItem) bool {
	cctx, cancel := s.detached(ctx)
	defer cancel()
	d, _, err := s.readItem(cctx, want.UserID, want.ID)
	if err != nil {
		return brainwire.ErrorCode(err) != brainwire.ENotFound
	}
	got := d.item()
	return got.FiledUnder != nil && want.FiledUnder != nil && got.FiledUnder.Key == want.FiledUnder.Key &&
		got.FiledRecordID == want.FiledRecordID && recordOf(d) == recordOf(toInboxDoc(want))
}

// afterTakeover clears the way for f, a new capture's filing under a key
// that was taken over: the run that held it may have died between writing
// the capture's bucket record and its item (every run of the request
// writes the same ids). An item it wrote is the capture, filed: EConflict,
// and the caller tells what it holds. A record it wrote alone, in
// whichever bucket, goes, so that the capture is in one bucket once.
func (s *Store) afterTakeover(ctx context.Context, f brainwire.Filing) error {
	switch _, _, err := s.readItem(ctx, f.UserID, f.NewInboxID); {
	case err == nil:
		return brainwire.Errorf(brainwire.EConflict, "inbox item %q already exists", f.NewInboxID)
	case brainwire.ErrorCode(err) != brainwire.ENotFound:
		return err
	}
	if f.NewRecordID == "" {
		return nil
	}
	pk := azcosmos.NewPartitionKeyString(f.UserID)
	for _, b := range brainwire.Buckets {
		if _, err := s.buckets[b].DeleteItem(ctx, pk, f.NewRecordID, nil); err != nil && statusOf(err) != http.StatusNotFound {
			return opErr("deleting "+recordDoing(b, f.NewRecordID)+" left by a run that died", "bucket record", err)
		}
	}
	return nil
}

// settleKey settles a filing's key once its item is written, also when the
// filing's caller has gone: the claim's document, unchanged since the
// filing read it (etag), is replaced by the key done. A failure is logged,
// not returned: the capture is filed, and its item says under which key.
func (s *Store) settleKey(ctx context.Context, k brainwire.IdempotencyKey, etag azcore.ETag) {
	cctx, cancel := s.detached(ctx)
	defer cancel()
	doc := toKeyDoc(normalizeKey(k))
	pk := azcosmos.NewPartitionKeyString(k.UserID)
	if err := s.replace(cctx, s.keys, pk, doc.ID, doc, etag, "settling an idempotency key", "idempotency key"); err != nil {
		s.log.WarnContext(ctx, "cosmos: the idempotency key of a filed capture was not settled; its item records it",
			"user_id", k.UserID, "inbox_item_id", k.ItemID, "error", err)
	}
}

// refile files f onto the existing Inbox item f.InboxItemID.
func (s *Store) refile(ctx context.Context, f brainwire.Filing) (brainwire.InboxItem, error) {
	// The read may be served by a lagging replica (azcosmos carries no
	// session token between requests); the ETag condition on the replace
	// turns that into a conflict, never a lost update.
	old, etag, err := s.readItem(ctx, f.UserID, f.InboxItemID)
	if err != nil {
		return brainwire.InboxItem{}, err
	}
	if err := f.CheckRefile(old.item()); err != nil {
		return brainwire.InboxItem{}, err
	}
	item := f.Refile(old.item())
	item.Shadow = old.item().Shadow // the trial ran on the capture, which a follow-up completes
	undo, err := s.createRecord(ctx, item, f.Now)
	if err != nil {
		return brainwire.InboxItem{}, err
	}
	if item, err = s.replaceKeepingShadow(ctx, item, old, etag); err != nil {
		return brainwire.InboxItem{}, undo(err)
	}
	s.dropRecord(ctx, f.UserID, recordOf(old), item.ID)
	return item, nil
}

// createRecord creates the bucket record a filed item links to, if any,
// ahead of the item. undo deletes it again when the item's write fails
// with the given error, and returns that error.
func (s *Store) createRecord(ctx context.Context, item brainwire.InboxItem, createdAt time.Time) (undo func(error) error, err error) {
	if item.FiledRecordID == "" {
		return func(err error) error { return err }, nil
	}
	rec := item.Record(createdAt)
	bucket := s.buckets[rec.Bucket]
	if err := s.create(ctx, bucket, item.UserID, toBucketDoc(rec), recordDoing(rec.Bucket, rec.ID), "bucket record"); err != nil {
		return nil, err
	}
	return func(err error) error { return s.undoCreate(ctx, err, bucket, item.UserID, rec.Bucket, rec.ID) }, nil
}

// GetInboxItem returns one of the user's Inbox items.
func (s *Store) GetInboxItem(ctx context.Context, userID, id string) (brainwire.InboxItem, error) {
	d, _, err := s.readItem(ctx, userID, id)
	if err != nil {
		return brainwire.InboxItem{}, err
	}
	return d.item(), nil
}

// GetBucketRecord returns one of the user's records in bucket.
func (s *Store) GetBucketRecord(ctx context.Context, userID, bucket, id string) (brainwire.BucketRecord, error) {
	if !brainwire.ValidBucket(bucket) {
		return brainwire.BucketRecord{}, brainwire.Errorf(brainwire.EInvalid, "unknown bucket %q", bucket)
	}
	if userID == "" || !validID(id) {
		return brainwire.BucketRecord{}, brainwire.Errorf(brainwire.ENotFound, "bucket record not found")
	}
	resp, err := s.buckets[bucket].ReadItem(ctx, azcosmos.NewPartitionKeyString(userID), id, nil)
	if err != nil {
		return brainwire.BucketRecord{}, opErr("reading "+recordDoing(bucket, id), "bucket record", err)
	}
	d, err := decode[bucketDoc](recordDoing(bucket, id), resp.Value)
	if err != nil {
		return brainwire.BucketRecord{}, err
	}
	return d.record(bucket), nil
}

// DeleteInboxItem deletes the item's bucket record, then the item.
//
// This order leaves the lesser harm when the second delete fails: the item
// stays visible in the Inbox (pointing at a record that is gone) and the
// person can delete it again, which then succeeds. The reverse order would
// leave a bucket record no Inbox item points to, which nothing in the API
// can reach or delete any more: data the person asked to have deleted.
func (s *Store) DeleteInboxItem(ctx context.Context, userID, id string) error {
	d, etag, err := s.readItem(ctx, userID, id)
	if err != nil {
		return err
	}
	if rec := recordOf(d); rec.id != "" {
		_, err := s.buckets[rec.bucket].DeleteItem(ctx, azcosmos.NewPartitionKeyString(userID), rec.id, nil)
		if err != nil && statusOf(err) != http.StatusNotFound {
			return opErr("deleting "+recordDoing(rec.bucket, rec.id), "bucket record", err)
		}
	}
	// If-Match: a concurrent refile may have linked a new record, which
	// this delete would orphan.
	_, err = s.inbox.DeleteItem(ctx, azcosmos.NewPartitionKeyString(userID), id, &azcosmos.ItemOptions{IfMatchEtag: &etag})
	if err != nil && statusOf(err) != http.StatusNotFound {
		return opErr("deleting inbox item "+id, "inbox item", err)
	}
	return nil
}

// Recategorize moves the item's bucket record to bucket, keeping its id
// (or creates one with id newRecordID if the item has none), and marks the
// item classified by classifiedBy. The record is created in the new bucket
// first, the item replaced only if unchanged since it was read (else the
// new record is deleted again), and the old record deleted last.
func (s *Store) Recategorize(ctx context.Context, userID, id, bucket, newRecordID, classifiedBy string, now time.Time) (brainwire.InboxItem, error) {
	if !brainwire.ValidBucket(bucket) {
		return brainwire.InboxItem{}, brainwire.Errorf(brainwire.EInvalid, "unknown bucket %q", bucket)
	}
	if now.IsZero() {
		return brainwire.InboxItem{}, brainwire.Errorf(brainwire.EInvalid, "missing time")
	}
	d, etag, err := s.readItem(ctx, userID, id)
	if err != nil {
		return brainwire.InboxItem{}, err
	}
	item := d.item().Recategorized(bucket, classifiedBy, now)
	old := recordOf(d)
	// A new record unless the item's record is found and moved below.
	item.FiledRecordID = newRecordID
	rec := item.Record(now)
	var oldRec *bucketDoc
	var oldEtag azcore.ETag
	if old.id != "" {
		resp, err := s.buckets[old.bucket].ReadItem(ctx, azcosmos.NewPartitionKeyString(userID), old.id, nil)
		switch {
		case err == nil:
			r, err := decode[bucketDoc](recordDoing(old.bucket, old.id), resp.Value)
			if err != nil {
				return brainwire.InboxItem{}, err
			}
			oldRec, oldEtag = &r, resp.ETag
			rec.ID, rec.CreatedAt = r.ID, r.CreatedAt.time()
		case statusOf(err) == http.StatusNotFound:
			// The link is already broken: file it afresh.
		default:
			return brainwire.InboxItem{}, opErr("reading "+recordDoing(old.bucket, old.id), "bucket record", err)
		}
	}
	if !validID(rec.ID) {
		return brainwire.InboxItem{}, brainwire.Errorf(brainwire.EInvalid, "invalid new record id %q", rec.ID)
	}
	item.FiledRecordID = rec.ID

	if oldRec != nil && old.bucket == bucket {
		return s.reclassifyInPlace(ctx, item, d, etag, rec, *oldRec, oldEtag)
	}
	target := s.buckets[bucket]
	if err := s.create(ctx, target, userID, toBucketDoc(rec), recordDoing(bucket, rec.ID), "bucket record"); err != nil {
		return brainwire.InboxItem{}, err
	}
	if item, err = s.replaceKeepingShadow(ctx, item, d, etag); err != nil {
		return brainwire.InboxItem{}, s.undoCreate(ctx, err, target, userID, bucket, rec.ID)
	}
	if oldRec != nil {
		s.dropRecord(ctx, userID, old, item.ID)
	}
	return item, nil
}

// reclassifyInPlace handles a recategorization into the bucket the record
// is already in: the record's classification is updated, then the item; if
// the item has changed meanwhile the record is restored.
func (s *Store) reclassifyInPlace(ctx context.Context, item brainwire.InboxItem, read inboxDoc, etag azcore.ETag, rec brainwire.BucketRecord, oldRec bucketDoc, oldEtag azcore.ETag) (brainwire.InboxItem, error) {
	c := s.buckets[rec.Bucket]
	doing := recordDoing(rec.Bucket, rec.ID)
	pk := azcosmos.NewPartitionKeyString(item.UserID)
	if err := s.replace(ctx, c, pk, rec.ID, toBucketDoc(rec), oldEtag, "updating "+doing, "bucket record"); err != nil {
		if statusOf(err) == http.StatusNotFound {
			// The record was there when read: a concurrent recategorize
			// or refile has moved it since.
			return brainwire.InboxItem{}, &opError{doing: "updating " + doing,
				app: brainwire.Errorf(brainwire.EConflict, "inbox item %s was changed by another request; try again", item.ID), cause: err}
		}
		return brainwire.InboxItem{}, err
	}
	written, err := s.replaceKeepingShadow(ctx, item, read, etag)
	if err != nil {
		cctx, cancel := s.detached(ctx)
		defer cancel()
		rerr := s.replace(cctx, c, pk, rec.ID, oldRec, "", "restoring "+doing, "bucket record")
		if statusOf(rerr) == http.StatusNotFound {
			// The request that changed the item moved the record on
			// and deleted this one: nothing of this request is left.
			return brainwire.InboxItem{}, err
		}
		if rerr != nil {
			s.log.ErrorContext(ctx, "cosmos: could not restore bucket record after a failed recategorize",
				"user_id", item.UserID, "bucket", rec.Bucket, "record_id", rec.ID, "error", rerr)
			return brainwire.InboxItem{}, errors.Join(err, rerr)
		}
		return brainwire.InboxItem{}, err
	}
	return written, nil
}

// readItem reads an Inbox item with its ETag.
func (s *Store) readItem(ctx context.Context, userID, id string) (inboxDoc, azcore.ETag, error) {
	if userID == "" || !validID(id) {
		return inboxDoc{}, "", brainwire.Errorf(brainwire.ENotFound, "inbox item not found")
	}
	resp, err := s.inbox.ReadItem(ctx, azcosmos.NewPartitionKeyString(userID), id, nil)
	if err != nil {
		return inboxDoc{}, "", opErr("reading inbox item "+id, "inbox item", err)
	}
	d, err := decode[inboxDoc]("inbox item "+id, resp.Value)
	if err != nil {
		return inboxDoc{}, "", err
	}
	return d, resp.ETag, nil
}

// replaceItem replaces an Inbox item if its ETag still matches.
func (s *Store) replaceItem(ctx context.Context, item brainwire.InboxItem, etag azcore.ETag) error {
	pk := azcosmos.NewPartitionKeyString(item.UserID)
	return s.replace(ctx, s.inbox, pk, item.ID, toInboxDoc(item), etag, "replacing inbox item "+item.ID, "inbox item")
}

func (s *Store) replace(ctx context.Context, c *azcosmos.ContainerClient, pk azcosmos.PartitionKey, id string, doc any, etag azcore.ETag, doing, subject string) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("cosmos: encoding %s: %w", subject, err)
	}
	var opts *azcosmos.ItemOptions
	if etag != "" {
		opts = &azcosmos.ItemOptions{IfMatchEtag: &etag}
	}
	if _, err := c.ReplaceItem(ctx, pk, id, b, opts); err != nil {
		return opErr(doing, subject, err)
	}
	return nil
}

func (s *Store) create(ctx context.Context, c *azcosmos.ContainerClient, userID string, doc any, what, subject string) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("cosmos: encoding %s: %w", what, err)
	}
	if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(userID), b, nil); err != nil {
		return opErr("creating "+what, subject, err)
	}
	return nil
}

// undoCreate deletes the bucket record created before the write that failed
// with cause, and returns cause (joined with the cleanup's own failure, if
// any).
func (s *Store) undoCreate(ctx context.Context, cause error, c *azcosmos.ContainerClient, userID, bucket, id string) error {
	cctx, cancel := s.detached(ctx)
	defer cancel()
	_, err := c.DeleteItem(cctx, azcosmos.NewPartitionKeyString(userID), id, nil)
	if err == nil || statusOf(err) == http.StatusNotFound {
		return cause
	}
	s.log.ErrorContext(ctx, "cosmos: could not delete the bucket record of a failed write; it is orphaned",
		"user_id", userID, "bucket", bucket, "record_id", id, "error", err)
	return errors.Join(cause, opErr("deleting "+recordDoing(bucket, id)+" after a failed write", "bucket record", err))
}

// dropRecord deletes a record the item no longer links to. The item is
// already consistent, so a failure is logged rather than returned: failing
// the call would invite a retry that files the capture again.
func (s *Store) dropRecord(ctx context.Context, userID string, old recordRef, itemID string) {
	if old.id == "" {
		return
	}
	cctx, cancel := s.detached(ctx)
	defer cancel()
	_, err := s.buckets[old.bucket].DeleteItem(cctx, azcosmos.NewPartitionKeyString(userID), old.id, nil)
	if err != nil && statusOf(err) != http.StatusNotFound {
		s.log.ErrorContext(ctx, "cosmos: could not delete an unlinked bucket record; it is orphaned",
			"user_id", userID, "bucket", old.bucket, "record_id", old.id, "inbox_item_id", itemID,
			"error", opErr("deleting "+recordDoing(old.bucket, old.id), "bucket record", err))
	}
}

// recordRef names a bucket record.
type recordRef struct{ bucket, id string }

// recordOf returns the bucket record an Inbox item links to, if any.
func recordOf(d inboxDoc) recordRef {
	if d.FiledRecordID == "" || d.ClassificationMeta == nil || !brainwire.ValidBucket(d.ClassificationMeta.Bucket) {
		return recordRef{}
	}
	return recordRef{bucket: d.ClassificationMeta.Bucket, id: d.FiledRecordID}
}

func recordDoing(bucket, id string) string { return bucket + " record " + id }

// validateFiling adds to the shared rules what Cosmos ids need.
func validateFiling(f brainwire.Filing) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if f.InboxItemID == "" && !validID(f.NewInboxID) {
		return brainwire.Errorf(brainwire.EInvalid, "invalid inbox item id %q", f.NewInboxID)
	}
	if f.FilesRecord() && !validID(f.NewRecordID) {
		return brainwire.Errorf(brainwire.EInvalid, "invalid record id %q", f.NewRecordID)
	}
	return nil
}
