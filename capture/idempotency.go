package capture

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adapter"
)

// A capture may run under an Idempotency-Key, so that the phone can retry
// a capture whose stream broke without filing it twice. The first request
// with a key claims it in the store for its run; once its capture reached
// the store (an outcome naming an item), repeats of the request within
// brainwire.KeyLifetime replay that outcome and run nothing. A capture
// that filed nothing (ERROR, an unresolved follow-up) releases its key:
// the retry runs afresh. A repeat while the first still runs is
// ErrKeyRunning; a repeat that is another request is EKeyReused. Keys are
// the user's own.
const (
	// keyLeaseGrace is how long a running claim outlives the run timeout:
	// time to keep an unresolved capture and give the key back. Only a
	// replica that died or stalled mid-run leaves a claim to lapse; a
	// repeat then takes it over. A capture filed before is not filed
	// again, however long the replica stalled: the filing settled the key
	// (brainwire.Filing.Key), and a run that lost its key cannot file.
	keyLeaseGrace = 10 * time.Second
	// keySettleTimeout bounds recording a capture's outcome under its key,
	// done also when the client has gone.
	keySettleTimeout = 15 * time.Second
)

// EKeyReused is the code of an Idempotency-Key sent again with another
// request.
const EKeyReused = "key_reused"

// ErrKeyRunning refuses a repeat of a request whose capture still runs.
var ErrKeyRunning = brainwire.Errorf(brainwire.EConflict, "a request with this Idempotency-Key is still running; try again in a few seconds")

// keyHold is a capture's claim on its Idempotency-Key while it runs; nil
// for a capture without one. The capture's filing settles the key
// (tools.Set.FileUnder); settle records how a capture that filed nothing
// ended; release gives the key back, unless settled.
type keyHold struct {
	s       *Service
	key     brainwire.IdempotencyKey
	settled bool
}

// claimKey claims key for the Run's capture, before anything runs. When
// the key's capture ended before, the Run replays it instead.
func (r *Run) claimKey(key, fingerprint string) error {
	s, c := r.s, r.c
	if s.keys == nil {
		return brainwire.Errorf(brainwire.EUnavailable, "this server's store keeps no idempotency keys")
	}
	now := s.cfg.Now()
	claim := brainwire.IdempotencyKey{UserID: c.UserID, Key: key, Fingerprint: fingerprint, Token: uuid.NewString(),
		State: brainwire.KeyRunning, At: now, Until: now.Add(s.cfg.RunTimeout + keyLeaseGrace)}
	claim.ItemID = brainwire.ItemIDOf(claim.UserID, claim.Key, claim.Fingerprint)
	if c.FollowUp != nil {
		claim.ItemID = c.FollowUp.Item.ID
	}
	got, claimed, err := s.keys.ClaimKey(r.ctx, claim)
	switch {
	case err != nil:
		return err
	case claimed:
		r.hold = &keyHold{s: s, key: got}
		// The run that held the key before may have filed the capture
		// and died before the key said so: its item does.
		if rp := s.filedUnder(r.ctx, got); rp != nil {
			r.hold.finish(r.ctx, c.RunID, *rp)
			r.replayOf(*rp)
		}
		return nil
	case got.Fingerprint != claim.Fingerprint:
		return &brainwire.Error{Code: EKeyReused,
			Message: "this Idempotency-Key was used for another request; use a new key for a new capture"}
	case got.State == brainwire.KeyDone && got.Replay != nil:
		r.replayOf(*got.Replay)
		return nil
	}
	return ErrKeyRunning
}

func (r *Run) replayOf(rp brainwire.Replay) {
	r.replay = &rp
	r.c = rp.Capture(r.c.UserID)
}

// filedUnder is the replay of the capture filed under key k (its item
// records it), or nil when none was, as far as the store can tell.
func (s *Service) filedUnder(ctx context.Context, k brainwire.IdempotencyKey) *brainwire.Replay {
	if !k.TookOver || k.ItemID == "" {
		return nil
	}
	item, err := s.cfg.Store.GetInboxItem(ctx, k.UserID, k.ItemID)
	if err != nil {
		if brainwire.ErrorCode(err) != brainwire.ENotFound {
			s.cfg.Logger.Error("looking for the item of an idempotency key taken over", "inbox_item_id", k.ItemID, "user", k.UserID, "error", err)
		}
		return nil
	}
	return item.FiledUnderKey(k.Key)
}

// replayed tells the capture's outcome again: the same item, no agent
// run, no filing.
func (r *Run) replayed(yield func(brainwire.CaptureEvent) bool) {
	c, s := r.c, r.s
	r.res = r.replay.Result()
	for _, ev := range adapter.Replay(c, &r.res, nil) {
		if !yield(ev) {
			break
		}
	}
	if ro, ok := s.cfg.Observer.(brainwire.ReplayObserver); ok {
		ro.CaptureReplayed(r.ctx, c, r.res)
	}
	s.cfg.Logger.Info("capture replayed", "run_id", c.RunID, "thread_id", c.ThreadID, "kind", c.Kind, "user", c.UserID,
		"outcome", r.res.Outcome, "inbox_item_id", r.res.InboxItemID)
}

// settle records how capture c ended under the key, unless its filing
// did (filed): its outcome to replay when it reached the store, else the
// key goes back for a retry to run afresh. Done also when the client has
// gone, hence a context of its own.
func (h *keyHold) settle(ctx context.Context, c brainwire.Capture, res brainwire.CaptureResult, filed bool) {
	if h == nil || h.settled {
		return
	}
	h.settled = true
	if filed {
		return
	}
	if rp := brainwire.ReplayOf(c, res); rp != nil {
		// Filed, but not settled by its filing: a run of the same request
		// filed it before this one (tools.Set adopts that filing).
		h.finish(ctx, c.RunID, *rp)
		return
	}
	s := h.s
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keySettleTimeout)
	defer cancel()
	if err := s.keys.ReleaseKey(ctx, h.key.UserID, h.key.Key, h.key.Token); err != nil {
		s.cfg.Logger.Error("releasing the idempotency key", "run_id", c.RunID, "user", h.key.UserID, "error", err)
	}
}

// finish records rp, what the key's capture told its phone, for repeats
// to replay.
func (h *keyHold) finish(ctx context.Context, runID string, rp brainwire.Replay) {
	h.settled = true
	s := h.s
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keySettleTimeout)
	defer cancel()
	if err := s.keys.FinishKey(ctx, h.key.Done(rp, s.cfg.Now())); err != nil {
		s.cfg.Logger.Error("recording the capture's outcome under its idempotency key", "run_id", runID, "user", h.key.UserID, "error", err)
	}
}

// release gives the key back when the capture was refused before it ran.
func (h *keyHold) release(ctx context.Context) {
	h.settle(ctx, brainwire.Capture{}, brainwire.CaptureResult{}, false)
}
