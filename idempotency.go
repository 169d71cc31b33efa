package brainwire

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// KeyLifetime is how long a finished capture's Idempotency-Key replays its
// outcome.
const KeyLifetime = 24 * time.Hour

// KeyState says where the capture an idempotency key names is.
type KeyState string

// Key states.
const (
	KeyRunning KeyState = "running" // a run holds the key: repeats wait
	KeyDone    KeyState = "done"    // the capture was filed: repeats replay it
)

// IdempotencyKey is a capture request's Idempotency-Key as the store keeps
// it: the first request with the key claims it for its run (KeyRunning)
// and, once its capture reached the store, records the outcome (KeyDone)
// for repeats of the request to replay instead of running again. Keys are
// the user's own: another user's key of the same name is another key.
//
// A key stands until Until: while running, that is the claim's lease (a
// replica that died mid-run does not hold the key forever; a repeat then
// takes it over), once done, KeyLifetime after the outcome.
//
// The outcome is kept the moment the capture is filed, not when its run
// ends: the filing settles the key (Filing.Key). A replica that dies after
// filing therefore leaves the key done, or, on a store that cannot write
// both at once, the filed item carrying the key (InboxItem.FiledUnder),
// where the claim that takes the key over finds it (TookOver, ItemID).
type IdempotencyKey struct {
	UserID string
	Key    string
	// Fingerprint identifies the request (route and body): a repeat with
	// another fingerprint is another request under the same key.
	Fingerprint string
	// Token names the run that claimed the key.
	Token string
	State KeyState
	At    time.Time // when it was claimed, or finished
	Until time.Time // when it lapses
	// Replay is what the phone was told, once done.
	Replay *Replay
	// ItemID is the inbox item the key's capture files: for a new capture
	// the id its item is created with, the same for every claim of one
	// request (ItemIDOf), so that all the runs under the key file one item
	// (a store holds one item per id); for a follow-up, the item it
	// refiles.
	ItemID string
	// TookOver is set on a claim ClaimKey granted by taking over a lapsed
	// running claim of the same request: that run may have filed before it
	// died, and the item ItemID then says so (FiledUnder).
	TookOver bool
}

// Replacing is claim k as it replaces old, a key of the same name that no
// longer stands: TookOver when old was a running claim of the same
// request, whose run may have filed before it died.
func (k IdempotencyKey) Replacing(old IdempotencyKey) IdempotencyKey {
	k.TookOver = old.State == KeyRunning && old.Fingerprint == k.Fingerprint
	return k
}

// itemIDSpace is the name space of ItemIDOf's ids.
var itemIDSpace = uuid.MustParse("5b0f6d1e-9c1a-4a51-8a8e-3c2f7e4d9a10")

// RecordIDOf is the id of the bucket record of the new capture filed as
// item itemID under an Idempotency-Key: the same for every run of the
// request, so that a run finds what one before it left half-written.
func RecordIDOf(itemID string) string {
	return uuid.NewSHA1(itemIDSpace, []byte("record\x00"+itemID)).String()
}

// ItemIDOf is the inbox item id of the new capture a user's request files
// under an Idempotency-Key: a name-based UUID of the user, the key and the
// request's fingerprint, so that whichever run of the request files it,
// however its claims came and went, it is one item.
func ItemIDOf(userID, key, fingerprint string) string {
	return uuid.NewSHA1(itemIDSpace, []byte(userID+"\x00"+key+"\x00"+fingerprint)).String()
}

// Done is k settled by a capture filed as rp at now: what a filing keeps
// under the key (Filing.Key) for repeats to replay for KeyLifetime. It
// keeps TookOver: a store that cannot file in one write cleans up after
// the run before this one (the Cosmos DB store).
func (k IdempotencyKey) Done(rp Replay, now time.Time) IdempotencyKey {
	k.State, k.At, k.Until, k.Replay = KeyDone, now, now.Add(KeyLifetime), &rp
	return k
}

// ErrKeyTakenOver refuses a filing whose run no longer holds its
// Idempotency-Key: the claim lapsed and a repeat of the request took the
// key over, so that repeat files the capture, not this run.
var ErrKeyTakenOver = &Error{Code: EConflict, Message: "this capture's Idempotency-Key was taken over by a repeat of its request"}

// KeyRecord is the Idempotency-Key an inbox item was filed under, and what
// the filing's phone was told.
type KeyRecord struct {
	Key    string `json:"key"`
	Replay Replay `json:"replay"`
}

// FiledUnderKey is the replay of the capture filed as it under key, or nil
// when it was not filed under that key.
func (it InboxItem) FiledUnderKey(key string) *Replay {
	if it.FiledUnder == nil || it.FiledUnder.Key != key {
		return nil
	}
	rp := it.FiledUnder.Replay
	return &rp
}

// StandsAt reports whether k still holds its key at t.
func (k IdempotencyKey) StandsAt(t time.Time) bool { return t.Before(k.Until) }

// Validate checks a key before a store writes it.
func (k IdempotencyKey) Validate() error {
	switch {
	case k.UserID == "" || k.Key == "":
		return Errorf(EInvalid, "an idempotency key needs a user and a key")
	case k.Token == "" || k.Fingerprint == "":
		return Errorf(EInvalid, "an idempotency key needs a token and a fingerprint")
	case k.At.IsZero() || !k.Until.After(k.At):
		return Errorf(EInvalid, "an idempotency key needs a time span")
	case k.State == KeyRunning && k.Replay != nil, k.State == KeyDone && k.Replay == nil:
		return Errorf(EInvalid, "a %s idempotency key has a replay only when done", k.State)
	case k.State != KeyRunning && k.State != KeyDone:
		return Errorf(EInvalid, "unknown idempotency key state %q", k.State)
	}
	return nil
}

// Replay is what a filed capture told the phone: enough to tell it again,
// in any protocol, without running anything.
type Replay struct {
	Kind             CaptureKind `json:"kind"`
	ThreadID         string      `json:"threadId"`
	RunID            string      `json:"runId"`
	FollowUpRound    int         `json:"followUpRound,omitempty"`
	Outcome          Outcome     `json:"outcome"`
	InboxItemID      string      `json:"inboxItemId"`
	Bucket           string      `json:"bucket,omitempty"`
	Confidence       float64     `json:"confidence"`
	Question         string      `json:"question,omitempty"`
	UpstreamThreadID string      `json:"upstreamThreadId,omitempty"`
}

// ReplayOf is the replay of capture c that ended as res, or nil when the
// capture left nothing in the store to replay: it failed (ERROR), it was
// not kept as an item (an unresolved capture the store could not keep),
// or it was a follow-up that did not refile its item (its round is given
// back). A repeat of such a capture runs again.
func ReplayOf(c Capture, res CaptureResult) *Replay {
	switch {
	case res.Outcome == "" || res.Outcome == OutcomeError || res.InboxItemID == "":
		return nil
	case c.FollowUp != nil && !res.Outcome.Filed():
		return nil
	}
	r := &Replay{Kind: c.Kind, ThreadID: c.ThreadID, RunID: c.RunID, Outcome: res.Outcome,
		InboxItemID: res.InboxItemID, Bucket: res.Bucket, Confidence: res.Confidence, Question: res.Question,
		UpstreamThreadID: res.UpstreamThreadID}
	if c.FollowUp != nil {
		r.FollowUpRound = c.FollowUp.Round
	}
	return r
}

// Capture is the capture r replays, as far as its phone protocols need it:
// kind, ids and follow-up round.
func (r Replay) Capture(userID string) Capture {
	c := Capture{Kind: r.Kind, UserID: userID, ThreadID: r.ThreadID, RunID: r.RunID}
	if r.FollowUpRound > 0 {
		c.FollowUp = &FollowUp{Round: r.FollowUpRound}
	}
	return c
}

// Result is the outcome r replays.
func (r Replay) Result() CaptureResult {
	return CaptureResult{Outcome: r.Outcome, InboxItemID: r.InboxItemID, Bucket: r.Bucket,
		Confidence: r.Confidence, Question: r.Question, UpstreamThreadID: r.UpstreamThreadID}
}

// IdempotencyStore keeps idempotency keys, so that they hold across
// replicas. Every method is scoped to one user.
type IdempotencyStore interface {
	// ClaimKey stores k (KeyRunning) and returns it and true, unless a key
	// of k.UserID named k.Key stands at k.At: then it returns that key and
	// false. A key that no longer stands (a lapsed lease, a lifetime
	// over) is replaced; when it was a running claim of the same request
	// (fingerprint), the new claim is returned with TookOver set. Of any
	// number of concurrent claims of one key, from any number of
	// processes, exactly one gets it.
	ClaimKey(ctx context.Context, k IdempotencyKey) (IdempotencyKey, bool, error)
	// FinishKey replaces the running claim named k.Token with k
	// (KeyDone, with its Replay and lifetime): EConflict when that claim
	// no longer holds the key (it lapsed and a repeat took it over).
	FinishKey(ctx context.Context, k IdempotencyKey) error
	// ReleaseKey deletes the claim named token, if it still holds the
	// key: the capture filed nothing, and a repeat runs afresh.
	ReleaseKey(ctx context.Context, userID, key, token string) error
}
