package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brainwire/brainwire"
)

const (
	// itemColumns are what a filing writes. The shadow trial is written by
	// RecordShadow alone, so that no filing or recategorize, whenever it
	// read the item, puts back a trial older than the one kept.
	itemColumns   = `user_id, id, raw_text, title, source, status, classification, filed_record_id, foundry_thread_id, follow_up_rounds, agent_run, follow_up_claim, filed_under, created_at, updated_at`
	readColumns   = itemColumns + `, shadow`
	recordColumns = `user_id, bucket, id, raw_text, title, classification, inbox_record_id, created_at`
)

// querier is what reads need from a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// File writes a filing in one transaction: a new item, or the refiled item,
// with its bucket record, and settles its Idempotency-Key (f.Key).
func (s *Store) File(ctx context.Context, f brainwire.Filing) (_ brainwire.InboxItem, err error) {
	defer wrapErr(&err, "filing capture %s", cmp.Or(f.InboxItemID, f.NewInboxID))
	if err := validateFiling(f); err != nil {
		return brainwire.InboxItem{}, err
	}
	var item brainwire.InboxItem
	err = s.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if f.InboxItemID == "" {
			item = stored(f.NewItem())
			if err := insertItem(ctx, tx, item); err != nil {
				return err
			}
		} else {
			before, err := getItem(ctx, tx, f.UserID, f.InboxItemID)
			if err != nil {
				return err
			}
			if err := f.CheckRefile(before); err != nil {
				return err
			}
			item = stored(f.Refile(before))
			item.Shadow = before.Shadow // the trial ran on the capture, which a follow-up completes
			// The old record goes first: the new one may reuse its id.
			if err := deleteRecordOf(ctx, tx, item.UserID, item.ID); err != nil {
				return err
			}
			if err := updateItem(ctx, tx, item); err != nil {
				return err
			}
		}
		if item.FiledRecordID != "" {
			if err := insertRecord(ctx, tx, item.Record(item.UpdatedAt)); err != nil {
				return err
			}
		}
		if f.Key != nil {
			// The key is settled with the filing: no moment exists when
			// the capture is filed and its key still free to run it again.
			return finishKey(ctx, tx, *f.Key)
		}
		return nil
	})
	if err != nil {
		return brainwire.InboxItem{}, err
	}
	return item, nil
}

// validateFiling adds to the shared rules what this store needs: times
// that fit the Unix nanoseconds they are stored as.
func validateFiling(f brainwire.Filing) error {
	if err := f.Validate(); err != nil {
		return err
	}
	return checkTime("filing time", f.Now)
}

// checkTime rejects times that do not fit the Unix nanoseconds they are
// stored as.
func checkTime(what string, t time.Time) error {
	if t.IsZero() {
		return brainwire.Errorf(brainwire.EInvalid, "missing %s", what)
	}
	if t.Before(time.Unix(0, math.MinInt64)) || t.After(time.Unix(0, math.MaxInt64)) {
		return brainwire.Errorf(brainwire.EInvalid, "%s %v out of range", what, t)
	}
	return nil
}

// stored is it as it reads back from this store: times in UTC to the
// nanosecond, and a classification that shares no memory with the
// caller's.
func stored(it brainwire.InboxItem) brainwire.InboxItem {
	it.CreatedAt = storedTime(it.CreatedAt)
	it.UpdatedAt = storedTime(it.UpdatedAt)
	if it.ClassificationMeta != nil {
		c := storedClassification(*it.ClassificationMeta)
		it.ClassificationMeta = &c
	}
	if it.AgentRun != nil {
		r := *it.AgentRun
		it.AgentRun = &r
	}
	if it.FollowUpClaim != nil {
		c := *it.FollowUpClaim
		c.At, c.Until = storedTime(c.At), storedTime(c.Until)
		it.FollowUpClaim = &c
	}
	if it.FiledUnder != nil {
		k := *it.FiledUnder
		it.FiledUnder = &k
	}
	if it.Shadow != nil {
		t := *it.Shadow
		t.At = storedTime(t.At)
		it.Shadow = &t
	}
	return it
}

// storedTime is t as it reads back: UTC, to the nanosecond.
func storedTime(t time.Time) time.Time { return time.Unix(0, t.UnixNano()).UTC() }

// storedClassification is c as it reads back from its JSON, sharing no
// memory with the caller's.
func storedClassification(c brainwire.Classification) brainwire.Classification {
	c.AllScores = maps.Clone(c.AllScores)
	if len(c.AllScores) == 0 {
		c.AllScores = nil
	}
	c.AgentChain = slices.Clone(c.AgentChain)
	if len(c.AgentChain) == 0 {
		c.AgentChain = nil
	}
	if c.ClassifiedAt.IsZero() {
		c.ClassifiedAt = time.Time{}
	} else {
		c.ClassifiedAt = c.ClassifiedAt.UTC()
	}
	return c
}

// encodeJSON is v as its column holds it: JSON text, or NULL for nil.
func encodeJSON[T any](what string, v *T) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", what, err)
	}
	return string(b), nil
}

// decodeJSON reads a column encodeJSON wrote.
func decodeJSON[T any](what string, s sql.NullString) (*T, error) {
	if !s.Valid {
		return nil, nil
	}
	v := new(T)
	if err := json.Unmarshal([]byte(s.String), v); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", what, err)
	}
	return v, nil
}

// claimDoc is a follow-up claim as its column holds it.
type claimDoc struct {
	Round int    `json:"round"`
	Token string `json:"token"`
	At    int64  `json:"at"`    // Unix nanoseconds, as the other times
	Until int64  `json:"until"` // Unix nanoseconds
}

func encodeClaim(c *brainwire.FollowUpClaim) (any, error) {
	if c == nil {
		return nil, nil
	}
	return encodeJSON("follow-up claim", &claimDoc{Round: c.Round, Token: c.Token, At: c.At.UnixNano(), Until: c.Until.UnixNano()})
}

func decodeClaim(s sql.NullString) (*brainwire.FollowUpClaim, error) {
	d, err := decodeJSON[claimDoc]("follow-up claim", s)
	if d == nil || err != nil {
		return nil, err
	}
	return &brainwire.FollowUpClaim{Round: d.Round, Token: d.Token, At: time.Unix(0, d.At).UTC(), Until: time.Unix(0, d.Until).UTC()}, nil
}

// itemColumnValues are the values of an item's columns that a write
// encodes: classification, agent run, follow-up claim and key record.
func itemColumnValues(it brainwire.InboxItem) (cls, run, claim, under any, err error) {
	if cls, err = encodeJSON("classification", it.ClassificationMeta); err != nil {
		return
	}
	if run, err = encodeJSON("agent run", it.AgentRun); err != nil {
		return
	}
	if claim, err = encodeClaim(it.FollowUpClaim); err != nil {
		return
	}
	under, err = encodeJSON("idempotency key record", it.FiledUnder)
	return
}

const insertItemSQL = `INSERT INTO inbox (` + itemColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func insertItem(ctx context.Context, tx writeTx, it brainwire.InboxItem) error {
	cls, run, claim, under, err := itemColumnValues(it)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, insertItemSQL,
		it.UserID, it.ID, it.RawText, it.Title, string(it.Source), it.Status, cls,
		it.FiledRecordID, it.UpstreamThreadID, it.FollowUpRounds, run, claim, under, it.CreatedAt.UnixNano(), it.UpdatedAt.UnixNano())
	if isConflict(err) {
		return brainwire.Errorf(brainwire.EConflict, "inbox item %q already exists", it.ID)
	}
	if err != nil {
		return fmt.Errorf("inserting inbox item: %w", err)
	}
	return nil
}

// updateItem writes every mutable field of an existing item.
func updateItem(ctx context.Context, tx writeTx, it brainwire.InboxItem) error {
	cls, run, claim, under, err := itemColumnValues(it)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `
UPDATE inbox SET raw_text = ?, title = ?, source = ?, status = ?, classification = ?,
	filed_record_id = ?, foundry_thread_id = ?, follow_up_rounds = ?, agent_run = ?, follow_up_claim = ?, filed_under = ?, updated_at = ?
WHERE user_id = ? AND id = ?`,
		it.RawText, it.Title, string(it.Source), it.Status, cls,
		it.FiledRecordID, it.UpstreamThreadID, it.FollowUpRounds, run, claim, under, it.UpdatedAt.UnixNano(),
		it.UserID, it.ID)
	if err != nil {
		return fmt.Errorf("updating inbox item: %w", err)
	}
	return nil
}

const insertRecordSQL = `INSERT INTO bucket_records (` + recordColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

func insertRecord(ctx context.Context, tx writeTx, r brainwire.BucketRecord) error {
	cls, err := encodeJSON("classification", r.ClassificationMeta)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, insertRecordSQL,
		r.UserID, r.Bucket, r.ID, r.RawText, r.Title, cls, r.InboxRecordID, r.CreatedAt.UnixNano())
	if isConflict(err) {
		return brainwire.Errorf(brainwire.EConflict, "%s record %q already exists", r.Bucket, r.ID)
	}
	if err != nil {
		return fmt.Errorf("inserting %s record: %w", r.Bucket, err)
	}
	return nil
}

func deleteRecordOf(ctx context.Context, tx writeTx, userID, itemID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM bucket_records WHERE user_id = ? AND inbox_record_id = ?`, userID, itemID); err != nil {
		return fmt.Errorf("deleting the bucket record of %s: %w", itemID, err)
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

func scanItem(sc scanner) (brainwire.InboxItem, error) {
	var (
		it               brainwire.InboxItem
		source           string
		cls, run, claim  sql.NullString
		under, shadow    sql.NullString
		created, updated int64
	)
	err := sc.Scan(&it.UserID, &it.ID, &it.RawText, &it.Title, &source, &it.Status, &cls,
		&it.FiledRecordID, &it.UpstreamThreadID, &it.FollowUpRounds, &run, &claim, &under, &created, &updated, &shadow)
	if err != nil {
		return brainwire.InboxItem{}, err
	}
	it.Source = brainwire.CaptureKind(source)
	it.CreatedAt = time.Unix(0, created).UTC()
	it.UpdatedAt = time.Unix(0, updated).UTC()
	it.ClassificationMeta, err = decodeJSON[brainwire.Classification]("classification", cls)
	if err == nil {
		it.AgentRun, err = decodeJSON[brainwire.AgentRun]("agent run", run)
	}
	if err == nil {
		it.FollowUpClaim, err = decodeClaim(claim)
	}
	if err == nil {
		it.FiledUnder, err = decodeJSON[brainwire.KeyRecord]("idempotency key record", under)
	}
	if err == nil {
		if it.Shadow, err = decodeJSON[brainwire.ShadowTrial]("shadow trial", shadow); it.Shadow != nil {
			it.Shadow.At = it.Shadow.At.UTC()
		}
	}
	if err != nil {
		return brainwire.InboxItem{}, fmt.Errorf("inbox item %s: %w", it.ID, err)
	}
	return it, nil
}

func getItem(ctx context.Context, q querier, userID, id string) (brainwire.InboxItem, error) {
	row := q.QueryRowContext(ctx, `SELECT `+readColumns+` FROM inbox WHERE user_id = ? AND id = ?`, userID, id)
	it, err := scanItem(row)
	if errors.Is(err, sql.ErrNoRows) {
		return brainwire.InboxItem{}, brainwire.Errorf(brainwire.ENotFound, "inbox item %q not found", id)
	}
	if err != nil {
		return brainwire.InboxItem{}, fmt.Errorf("reading inbox item %s: %w", id, err)
	}
	return it, nil
}

// GetInboxItem returns one of the user's inbox items.
func (s *Store) GetInboxItem(ctx context.Context, userID, id string) (_ brainwire.InboxItem, err error) {
	defer wrapErr(&err, "getting inbox item %s", id)
	if userID == "" {
		return brainwire.InboxItem{}, brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	return getItem(ctx, s.read, userID, id)
}

// ListInbox returns a page of the user's inbox, newest first.
func (s *Store) ListInbox(ctx context.Context, userID string, opts brainwire.ListOptions) (_ brainwire.InboxPage, err error) {
	defer wrapErr(&err, "listing inbox")
	if userID == "" {
		return brainwire.InboxPage{}, brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	limit, err := opts.PageSize()
	if err != nil {
		return brainwire.InboxPage{}, err
	}

	var q strings.Builder
	q.WriteString(`SELECT ` + readColumns + ` FROM inbox WHERE user_id = ?`)
	args := []any{userID}
	if opts.Status != "" { // PageSize checked it
		q.WriteString(` AND status = ?`)
		args = append(args, opts.Status)
	}
	if opts.Cursor != "" {
		created, id, err := decodeCursor(opts.Cursor)
		if err != nil {
			return brainwire.InboxPage{}, err
		}
		q.WriteString(` AND (created_at, id) < (?, ?)`)
		args = append(args, created, id)
	}
	// One more than the page shows whether another page follows.
	q.WriteString(` ORDER BY created_at DESC, id DESC LIMIT ?`)
	args = append(args, limit+1)

	rows, err := s.read.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return brainwire.InboxPage{}, err
	}
	defer rows.Close()
	items := make([]brainwire.InboxItem, 0, limit+1)
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return brainwire.InboxPage{}, err
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return brainwire.InboxPage{}, err
	}

	page := brainwire.InboxPage{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		last := items[limit-1]
		page.NextCursor = encodeCursor(last.CreatedAt.UnixNano(), last.ID)
	}
	return page, nil
}

// A cursor is the sort key of the last item shown: created_at and id.
func encodeCursor(createdAt int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(createdAt, 10) + ":" + id))
}

func decodeCursor(cursor string) (createdAt int64, id string, err error) {
	malformed := brainwire.Errorf(brainwire.EInvalid, "malformed cursor")
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, "", malformed
	}
	ts, id, ok := strings.Cut(string(b), ":")
	if !ok || id == "" {
		return 0, "", malformed
	}
	if createdAt, err = strconv.ParseInt(ts, 10, 64); err != nil {
		return 0, "", malformed
	}
	return createdAt, id, nil
}

// DeleteInboxItem removes the item and its bucket record.
func (s *Store) DeleteInboxItem(ctx context.Context, userID, id string) (err error) {
	defer wrapErr(&err, "deleting inbox item %s", id)
	if userID == "" {
		return brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	return s.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if err := deleteRecordOf(ctx, tx, userID, id); err != nil {
			return err
		}
		return changeItem(ctx, tx, "deleting inbox item", id, `DELETE FROM inbox WHERE user_id = ? AND id = ?`, userID, id)
	})
}

// changeItem runs a statement on inbox item id, doing what doing says:
// ENotFound when it changed no row.
func changeItem(ctx context.Context, tx writeTx, doing, id, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("%s: %w", doing, err)
	} else if n == 0 {
		return brainwire.Errorf(brainwire.ENotFound, "inbox item %q not found", id)
	}
	return nil
}

// Recategorize moves the item's bucket record to bucket, or creates one with
// id newRecordID, and marks the item classified by classifiedBy.
func (s *Store) Recategorize(ctx context.Context, userID, id, bucket, newRecordID, classifiedBy string, now time.Time) (_ brainwire.InboxItem, err error) {
	defer wrapErr(&err, "recategorizing %s to %s", id, bucket)
	if userID == "" {
		return brainwire.InboxItem{}, brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	if !brainwire.ValidBucket(bucket) {
		return brainwire.InboxItem{}, brainwire.Errorf(brainwire.EInvalid, "unknown bucket %q", bucket)
	}
	if err := checkTime("recategorize time", now); err != nil {
		return brainwire.InboxItem{}, err
	}
	var item brainwire.InboxItem
	err = s.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		before, err := getItem(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		item = before.Recategorized(bucket, classifiedBy, storedTime(now))
		cls, err := encodeJSON("classification", item.ClassificationMeta)
		if err != nil {
			return err
		}
		// A moved record keeps its id and creation time.
		var recID string
		err = tx.QueryRowContext(ctx, `
UPDATE bucket_records SET bucket = ?, classification = ?
WHERE user_id = ? AND inbox_record_id = ?
RETURNING id`, bucket, cls, userID, id).Scan(&recID)
		switch {
		case err == nil:
			item.FiledRecordID = recID
		case errors.Is(err, sql.ErrNoRows):
			if newRecordID == "" {
				return brainwire.Errorf(brainwire.EInvalid, "missing bucket record id")
			}
			item.FiledRecordID = newRecordID
			if err := insertRecord(ctx, tx, item.Record(item.UpdatedAt)); err != nil {
				return err
			}
		case isConflict(err):
			return brainwire.Errorf(brainwire.EConflict, "%s record %q already exists", bucket, before.FiledRecordID)
		default:
			return fmt.Errorf("moving bucket record: %w", err)
		}
		return updateItem(ctx, tx, item)
	})
	if err != nil {
		return brainwire.InboxItem{}, err
	}
	return item, nil
}

// RecordShadow keeps t on the item, replacing any trial it had
// (brainwire.ShadowStore). It writes the trial's column alone, in a write
// transaction as every write is: a recategorize or refile of the item runs
// wholly before or after it, and neither undoes the other.
func (s *Store) RecordShadow(ctx context.Context, userID, itemID string, t brainwire.ShadowTrial) (err error) {
	defer wrapErr(&err, "recording the shadow trial of %s", itemID)
	if userID == "" {
		return brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	if err := checkTime("shadow trial time", t.At); err != nil {
		return err
	}
	t.At = storedTime(t.At)
	doc, err := encodeJSON("shadow trial", &t)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		return changeItem(ctx, tx, "updating inbox item", itemID, `UPDATE inbox SET shadow = ? WHERE user_id = ? AND id = ?`, doc, userID, itemID)
	})
}

// ListUsers returns the users who have inbox items, in order
// (brainwire.UserLister).
func (s *Store) ListUsers(ctx context.Context) (_ []string, err error) {
	defer wrapErr(&err, "listing users")
	rows, err := s.read.QueryContext(ctx, `SELECT DISTINCT user_id FROM inbox ORDER BY user_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var users []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, err
		}
		users = append(users, u)
	}
	return users, rows.Err()
}

// GetBucketRecord returns one of the user's records in bucket.
func (s *Store) GetBucketRecord(ctx context.Context, userID, bucket, id string) (_ brainwire.BucketRecord, err error) {
	defer wrapErr(&err, "getting %s record %s", bucket, id)
	if userID == "" {
		return brainwire.BucketRecord{}, brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	if !brainwire.ValidBucket(bucket) {
		return brainwire.BucketRecord{}, brainwire.Errorf(brainwire.EInvalid, "unknown bucket %q", bucket)
	}
	var (
		r       brainwire.BucketRecord
		cls     sql.NullString
		created int64
	)
	err = s.read.QueryRowContext(ctx, `SELECT `+recordColumns+` FROM bucket_records WHERE user_id = ? AND bucket = ? AND id = ?`,
		userID, bucket, id).Scan(&r.UserID, &r.Bucket, &r.ID, &r.RawText, &r.Title, &cls, &r.InboxRecordID, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return brainwire.BucketRecord{}, brainwire.Errorf(brainwire.ENotFound, "%s record %q not found", bucket, id)
	}
	if err != nil {
		return brainwire.BucketRecord{}, err
	}
	r.CreatedAt = time.Unix(0, created).UTC()
	if r.ClassificationMeta, err = decodeJSON[brainwire.Classification]("classification", cls); err != nil {
		return brainwire.BucketRecord{}, err
	}
	return r, nil
}
