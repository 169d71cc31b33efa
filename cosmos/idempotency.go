package cosmos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
)

// KeysContainer holds capture requests' idempotency keys, one document
// per user and key, each expiring by its own ttl (the container's default
// TTL is on, with no default expiry).
const KeysContainer = "IdempotencyKeys"

// keyTTLMargin is how long past its Until the service keeps a finished
// key's document. Expiry is also checked on every read (Until), so the
// service deleting it late, or never (the test emulator does not expire
// documents), changes nothing. A running claim's document stays a
// KeyLifetime past its lease: the repeat of a request whose replica died
// then takes it over, knowing that a run may have left something behind
// (brainwire.IdempotencyKey.TookOver).
const keyTTLMargin = time.Minute

var _ brainwire.IdempotencyStore = (*Store)(nil)

// keyDoc is an idempotency key as stored.
type keyDoc struct {
	ID          string             `json:"id"`
	UserID      string             `json:"userId"`
	Key         string             `json:"key"`
	Fingerprint string             `json:"fingerprint"`
	Token       string             `json:"token"`
	State       brainwire.KeyState `json:"state"`
	At          stamp              `json:"at"`
	Until       stamp              `json:"until"`
	Replay      *brainwire.Replay  `json:"replay,omitempty"`
	ItemID      string             `json:"itemId,omitempty"`
	// TTL is the seconds after its last write the service deletes it.
	TTL int64 `json:"ttl"`
}

// keyID is the document id of a key: a key may hold characters document
// ids may not ('/', '?', ...), and be longer.
func keyID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func toKeyDoc(k brainwire.IdempotencyKey) keyDoc {
	margin := keyTTLMargin
	if k.State == brainwire.KeyRunning {
		margin = brainwire.KeyLifetime
	}
	ttl := int64(math.Ceil((k.Until.Sub(k.At) + margin).Seconds()))
	return keyDoc{ID: keyID(k.Key), UserID: k.UserID, Key: k.Key, Fingerprint: k.Fingerprint, Token: k.Token,
		State: k.State, At: stamp(k.At), Until: stamp(k.Until), Replay: k.Replay, ItemID: k.ItemID, TTL: ttl}
}

func (d keyDoc) key() brainwire.IdempotencyKey {
	return brainwire.IdempotencyKey{UserID: d.UserID, Key: d.Key, Fingerprint: d.Fingerprint, Token: d.Token,
		State: d.State, At: d.At.time(), Until: d.Until.time(), Replay: d.Replay, ItemID: d.ItemID}
}

// ClaimKey creates the key's document, which the service refuses (409)
// when one exists: of concurrent claims, one create wins. A document that
// no longer stands is taken over by a replace conditioned on its ETag, so
// that of concurrent takeovers one wins too; the others read it again and
// find it claimed.
func (s *Store) ClaimKey(ctx context.Context, claim brainwire.IdempotencyKey) (brainwire.IdempotencyKey, bool, error) {
	claim.State, claim.Replay, claim.TookOver = brainwire.KeyRunning, nil, false
	if err := claim.Validate(); err != nil {
		return brainwire.IdempotencyKey{}, false, err
	}
	claim = normalizeKey(claim)
	pk := azcosmos.NewPartitionKeyString(claim.UserID)
	for attempt := 1; ; attempt++ {
		k := claim
		doc := toKeyDoc(k)
		err := s.create(ctx, s.keys, k.UserID, doc, "idempotency key", "idempotency key")
		if err == nil {
			return k, true, nil
		}
		if statusOf(err) != http.StatusConflict {
			return brainwire.IdempotencyKey{}, false, err
		}
		old, etag, err := s.readKey(ctx, k.UserID, k.Key)
		switch {
		case brainwire.ErrorCode(err) == brainwire.ENotFound:
			// Deleted since the create: create it again.
		case err != nil:
			return brainwire.IdempotencyKey{}, false, err
		case old.StandsAt(k.At):
			return old, false, nil
		default:
			k = k.Replacing(old)
			err = s.replace(ctx, s.keys, pk, doc.ID, toKeyDoc(k), etag, "taking over an idempotency key", "idempotency key")
			if err == nil {
				return k, true, nil
			}
			if st := statusOf(err); st != http.StatusPreconditionFailed && st != http.StatusNotFound {
				return brainwire.IdempotencyKey{}, false, err
			}
		}
		if attempt == maxClaimAttempts {
			return brainwire.IdempotencyKey{}, false, brainwire.Errorf(brainwire.EConflict, "the idempotency key kept changing; try again")
		}
	}
}

// FinishKey replaces the claim named k.Token with k, if the key's document
// is still that claim (ETag match).
func (s *Store) FinishKey(ctx context.Context, k brainwire.IdempotencyKey) error {
	k.State = brainwire.KeyDone
	if err := k.Validate(); err != nil {
		return err
	}
	k = normalizeKey(k)
	old, etag, err := s.readKey(ctx, k.UserID, k.Key)
	if brainwire.ErrorCode(err) == brainwire.ENotFound || err == nil && (old.Token != k.Token || old.State != brainwire.KeyRunning) {
		return brainwire.Errorf(brainwire.EConflict, "the idempotency key is no longer held by this capture")
	}
	if err != nil {
		return err
	}
	doc := toKeyDoc(k)
	return s.replace(ctx, s.keys, azcosmos.NewPartitionKeyString(k.UserID), doc.ID, doc, etag, "finishing an idempotency key", "idempotency key")
}

// ReleaseKey deletes the claim named token, if the key's document is
// still that claim (ETag match).
func (s *Store) ReleaseKey(ctx context.Context, userID, key, token string) error {
	if userID == "" {
		return brainwire.Errorf(brainwire.EInvalid, "missing user id")
	}
	old, etag, err := s.readKey(ctx, userID, key)
	switch {
	case brainwire.ErrorCode(err) == brainwire.ENotFound:
		return nil
	case err != nil:
		return err
	case old.Token != token || old.State != brainwire.KeyRunning:
		return nil
	}
	_, err = s.keys.DeleteItem(ctx, azcosmos.NewPartitionKeyString(userID), keyID(key), &azcosmos.ItemOptions{IfMatchEtag: &etag})
	if err != nil && statusOf(err) != http.StatusNotFound && statusOf(err) != http.StatusPreconditionFailed {
		return opErr("releasing an idempotency key", "idempotency key", err)
	}
	return nil
}

func (s *Store) readKey(ctx context.Context, userID, key string) (brainwire.IdempotencyKey, azcore.ETag, error) {
	resp, err := s.keys.ReadItem(ctx, azcosmos.NewPartitionKeyString(userID), keyID(key), nil)
	if err != nil {
		return brainwire.IdempotencyKey{}, "", opErr("reading an idempotency key", "idempotency key", err)
	}
	d, err := decode[keyDoc]("idempotency key", resp.Value)
	if err != nil {
		return brainwire.IdempotencyKey{}, "", err
	}
	if d.Key != key {
		return brainwire.IdempotencyKey{}, "", fmt.Errorf("cosmos: the idempotency key document %s holds another key", d.ID)
	}
	return d.key(), resp.ETag, nil
}

// normalizeKey is k as it reads back: times in UTC.
func normalizeKey(k brainwire.IdempotencyKey) brainwire.IdempotencyKey {
	k.At, k.Until = k.At.UTC(), k.Until.UTC()
	return k
}

// keysDefaultTTL is the keys container's default TTL: on, no default
// expiry (-1); documents expire by their own ttl.
func keysDefaultTTL() *int32 {
	ttl := int32(-1)
	return &ttl
}
