package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/brainwire/brainwire"
)

var _ brainwire.IdempotencyStore = (*Store)(nil)

// sweepBatch bounds how many lapsed keys a claim deletes on its way, so
// that a claim after a long quiet spell does not do all of the sweeping.
const sweepBatch = 100

// ClaimKey claims an idempotency key in one write transaction, which holds
// the database's write lock from its start: two claims, even from two
// processes on the same file, cannot both find the key free. Each claim
// also deletes a few keys that have lapsed, once it has read its own.
func (s *Store) ClaimKey(ctx context.Context, k brainwire.IdempotencyKey) (_ brainwire.IdempotencyKey, claimed bool, err error) {
	defer wrapErr(&err, "claiming idempotency key")
	k.State, k.Replay, k.TookOver = brainwire.KeyRunning, nil, false
	if err := k.Validate(); err != nil {
		return brainwire.IdempotencyKey{}, false, err
	}
	k = storedKey(k)
	var standing brainwire.IdempotencyKey
	err = s.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		old, err := getKey(ctx, tx, k.UserID, k.Key)
		switch {
		case err == nil && old.StandsAt(k.At):
			standing = old
			return nil
		case err == nil:
			k = k.Replacing(old)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN
			(SELECT rowid FROM idempotency_keys WHERE until <= ? LIMIT ?)`, k.At.UnixNano(), sweepBatch); err != nil {
			return fmt.Errorf("sweeping lapsed keys: %w", err)
		}
		claimed = true
		_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_keys (user_id, key, fingerprint, token, state, at, until, replay, item_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)
			ON CONFLICT (user_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, token = excluded.token,
				state = excluded.state, at = excluded.at, until = excluded.until, replay = NULL, item_id = excluded.item_id`,
			k.UserID, k.Key, k.Fingerprint, k.Token, string(k.State), k.At.UnixNano(), k.Until.UnixNano(), k.ItemID)
		return err
	})
	switch {
	case err != nil:
		return brainwire.IdempotencyKey{}, false, err
	case claimed:
		return k, true, nil
	}
	return standing, false, nil
}

// FinishKey records the outcome of the claim named k.Token.
func (s *Store) FinishKey(ctx context.Context, k brainwire.IdempotencyKey) (err error) {
	defer wrapErr(&err, "finishing idempotency key")
	k.State = brainwire.KeyDone
	if err := k.Validate(); err != nil {
		return err
	}
	return s.inTx(ctx, func(ctx context.Context, tx writeTx) error { return finishKey(ctx, tx, k) })
}

// finishKey replaces the running claim k.Token with k, done: a filing's
// key (brainwire.Filing.Key) is settled so in the filing's transaction.
// ErrKeyTakenOver when that claim no longer holds the key.
func finishKey(ctx context.Context, tx writeTx, k brainwire.IdempotencyKey) error {
	replay, err := json.Marshal(k.Replay)
	if err != nil {
		return fmt.Errorf("encoding the replay: %w", err)
	}
	k = storedKey(k)
	res, err := tx.ExecContext(ctx, `UPDATE idempotency_keys SET fingerprint = ?, state = ?, at = ?, until = ?, replay = ?
		WHERE user_id = ? AND key = ? AND token = ? AND state = 'running'`,
		k.Fingerprint, string(brainwire.KeyDone), k.At.UnixNano(), k.Until.UnixNano(), string(replay), k.UserID, k.Key, k.Token)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return err
	case n == 0:
		return brainwire.ErrKeyTakenOver
	}
	return nil
}

// ReleaseKey deletes the claim named token, if it still holds the key.
func (s *Store) ReleaseKey(ctx context.Context, userID, key, token string) (err error) {
	defer wrapErr(&err, "releasing idempotency key")
	if userID == "" {
		return brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	return s.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE user_id = ? AND key = ? AND token = ? AND state = 'running'`,
			userID, key, token)
		return err
	})
}

func getKey(ctx context.Context, q querier, userID, key string) (brainwire.IdempotencyKey, error) {
	k := brainwire.IdempotencyKey{UserID: userID, Key: key}
	var (
		state     string
		at, until int64
		replay    sql.NullString
	)
	err := q.QueryRowContext(ctx, `SELECT fingerprint, token, state, at, until, replay, item_id FROM idempotency_keys WHERE user_id = ? AND key = ?`,
		userID, key).Scan(&k.Fingerprint, &k.Token, &state, &at, &until, &replay, &k.ItemID)
	if err != nil {
		return brainwire.IdempotencyKey{}, err
	}
	k.State = brainwire.KeyState(state)
	k.At, k.Until = time.Unix(0, at).UTC(), time.Unix(0, until).UTC()
	if replay.Valid {
		k.Replay = new(brainwire.Replay)
		if err := json.Unmarshal([]byte(replay.String), k.Replay); err != nil {
			return brainwire.IdempotencyKey{}, fmt.Errorf("decoding the replay of an idempotency key: %w", err)
		}
	}
	return k, nil
}

// storedKey is k as it reads back: times in UTC, to the nanosecond.
func storedKey(k brainwire.IdempotencyKey) brainwire.IdempotencyKey {
	k.At, k.Until = storedTime(k.At), storedTime(k.Until)
	return k
}
