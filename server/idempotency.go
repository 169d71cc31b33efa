package server

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/adapter"
)

// A capture request may carry an Idempotency-Key (the IETF httpapi draft
// "The Idempotency-Key HTTP Header Field"), so that the phone can retry a
// capture whose stream broke without filing it twice. The first request
// with a key claims it in the store for its run; once its capture reached
// the store (an outcome naming an item), repeats of the request within
// brainwire.KeyLifetime replay that outcome in their protocol, with
// Idempotent-Replayed: true, and run nothing. A capture that filed nothing
// (ERROR, an unresolved follow-up) releases its key: the retry runs
// afresh. A repeat while the first still runs gets 409 with Retry-After; a
// repeat that is another request (route or body) gets 422. Keys are the
// user's own.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	// maxIdempotencyKey bounds a key, in characters.
	maxIdempotencyKey = 255
	// keyLeaseGrace is how long a running claim outlives the run timeout:
	// time to keep an unresolved capture and give the key back. Only a
	// replica that died or stalled mid-run leaves a claim to lapse; a
	// repeat then takes it over. A capture filed before is not filed
	// again, however long the replica stalled: the filing settled the key
	// (brainwire.Filing.Key), and a run that lost its key cannot file.
	keyLeaseGrace = 10 * time.Second
	// keyRetryAfter is the Retry-After of a 409 for a key whose capture
	// is still running: captures take seconds.
	keyRetryAfter = 3 * time.Second
	// keySettleTimeout bounds recording a capture's outcome under its key,
	// done also when the client has gone.
	keySettleTimeout = 15 * time.Second
)

type idempotencyKeyCtx struct{}

// idempotent refuses a malformed Idempotency-Key with 400 before anything
// of the request is read, and passes a well-formed one on in the context.
func (s *Server) idempotent(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header.Values(headerIdempotencyKey)
		if len(vals) == 0 {
			next(w, r)
			return
		}
		key, err := parseIdempotencyKey(vals)
		if err != nil {
			writeError(w, err)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), idempotencyKeyCtx{}, key)))
	}
}

// parseIdempotencyKey reads the header's value: a Structured Field string
// (RFC 9651, `"..."` with \" and \\ escapes) as the draft has it, or,
// leniently, a bare token such as a UUID, as many clients send it. A key
// is 1 to maxIdempotencyKey printable ASCII characters.
func parseIdempotencyKey(vals []string) (string, error) {
	bad := func(why string) error {
		return brainwire.Errorf(brainwire.EInvalid, "Idempotency-Key %s: send one quoted string (or a token such as a UUID) of 1 to %d printable ASCII characters", why, maxIdempotencyKey)
	}
	if len(vals) != 1 {
		return "", bad("is repeated")
	}
	v := strings.Trim(vals[0], " \t")
	var key strings.Builder
	if strings.HasPrefix(v, `"`) {
		escaped, closed := false, false
		for i := 1; i < len(v); i++ {
			c := v[i]
			switch {
			case c < 0x20 || c > 0x7e:
				return "", bad("has a character that is not printable ASCII")
			case escaped:
				if c != '"' && c != '\\' {
					return "", bad("has an escape other than \\\" or \\\\")
				}
				key.WriteByte(c)
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				if i != len(v)-1 {
					return "", bad("has something after its closing quote")
				}
				closed = true
			default:
				key.WriteByte(c)
			}
		}
		if !closed {
			return "", bad("has no closing quote")
		}
	} else {
		for i := 0; i < len(v); i++ {
			if !tokenByte(v[i]) {
				return "", bad("is neither a quoted string nor a token")
			}
		}
		key.WriteString(v)
	}
	switch n := key.Len(); {
	case n == 0:
		return "", bad("is empty")
	case n > maxIdempotencyKey:
		return "", bad("is over " + strconv.Itoa(maxIdempotencyKey) + " characters")
	}
	return key.String(), nil
}

// tokenByte reports whether c may be part of a bare key: a token
// character (RFC 9110 tchar) or, as in a Structured Field token, ':' or
// '/'.
func tokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}

// requestKey is the request's Idempotency-Key, "" when it has none.
func requestKey(r *http.Request) string {
	k, _ := r.Context().Value(idempotencyKeyCtx{}).(string)
	return k
}

// fingerprint identifies a capture request for its key: a hash of its
// route and of what it asks for (the body, or a voice upload's fields and
// audio). Nil when the request has no key: there is nothing to compare.
type fingerprint struct{ h hash.Hash }

func newFingerprint(r *http.Request) *fingerprint {
	if requestKey(r) == "" {
		return nil
	}
	f := &fingerprint{h: sha256.New()}
	f.add([]byte(r.Method + " " + r.URL.Path))
	return f
}

// add adds one part, length first, so that parts cannot run into each
// other.
func (f *fingerprint) add(part []byte) {
	if f == nil {
		return
	}
	f.h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(part))))
	f.h.Write(part)
}

// Write adds bytes as they stream in, for a part read as it arrives (an
// AG-UI body): it must be the last part.
func (f *fingerprint) Write(p []byte) (int, error) {
	f.h.Write(p)
	return len(p), nil
}

func (f *fingerprint) String() string {
	if f == nil {
		return ""
	}
	return hex.EncodeToString(f.h.Sum(nil))
}

// keyHold is a request's claim on its Idempotency-Key while its capture
// runs; nil for a request without one. The capture's filing settles the
// key (tools.Set.FileUnder); settle records how a capture that filed
// nothing ended; release gives the key back, unless settled.
type keyHold struct {
	s       *Server
	key     brainwire.IdempotencyKey
	settled bool
	// filed says the capture's filing settled the key.
	filed bool
	// afterRound is set on a follow-up's hold: it is settled after the
	// follow-up's round is given back, not when the capture ends.
	afterRound bool
}

// holdKey claims the request's Idempotency-Key for capture c, before
// anything runs. It returns false when the request has been answered
// instead: a replay of the key's capture, 409 while it runs, 422 for
// another request under the key, or the store's error.
func (s *Server) holdKey(w http.ResponseWriter, r *http.Request, c brainwire.Capture, fp *fingerprint, newEncoder func(brainwire.Capture) encoder) (*keyHold, bool) {
	key := requestKey(r)
	if key == "" {
		return nil, true
	}
	if s.keys == nil {
		writeError(w, brainwire.Errorf(brainwire.EUnavailable, "this server's store keeps no idempotency keys"))
		return nil, false
	}
	now := s.cfg.Now()
	claim := brainwire.IdempotencyKey{UserID: c.UserID, Key: key, Fingerprint: fp.String(), Token: uuid.NewString(),
		State: brainwire.KeyRunning, At: now, Until: now.Add(s.cfg.RunTimeout + keyLeaseGrace)}
	claim.ItemID = brainwire.ItemIDOf(claim.UserID, claim.Key, claim.Fingerprint)
	if c.FollowUp != nil {
		claim.ItemID = c.FollowUp.Item.ID
	}
	got, claimed, err := s.keys.ClaimKey(r.Context(), claim)
	switch {
	case err != nil:
		writeError(w, err)
		return nil, false
	case claimed && got.TookOver:
		// The run that held the key before may have filed the capture
		// and died before the key said so: its item does.
		hold := &keyHold{s: s, key: got}
		if hold.replayFiled(w, r, c.RunID, newEncoder) {
			return nil, false
		}
		return hold, true
	case claimed:
		return &keyHold{s: s, key: got}, true
	case got.Fingerprint != claim.Fingerprint:
		writeError(w, &brainwire.Error{Code: errKeyReused,
			Message: "this Idempotency-Key was used for another request; use a new key for a new capture"})
	case got.State == brainwire.KeyDone && got.Replay != nil:
		s.replay(w, r, *got.Replay, newEncoder)
	default:
		w.Header().Set("Retry-After", strconv.Itoa(int(keyRetryAfter/time.Second)))
		writeError(w, brainwire.Errorf(brainwire.EConflict, "a request with this Idempotency-Key is still running; try again in a few seconds"))
	}
	return nil, false
}

// replayFiled answers the request with the replay of the capture its key's
// item says was filed under it, and settles the key so, when it was (a run
// that held the key filed it and died before the key said so): true then.
func (h *keyHold) replayFiled(w http.ResponseWriter, r *http.Request, runID string, newEncoder func(brainwire.Capture) encoder) bool {
	if h == nil {
		return false
	}
	rp := h.s.filedUnder(r.Context(), h.key)
	if rp == nil {
		return false
	}
	h.finish(r.Context(), runID, *rp)
	h.s.replay(w, r, *rp, newEncoder)
	return true
}

// filedUnder is the replay of the capture filed under key k (its item
// records it), or nil when none was, as far as the store can tell.
func (s *Server) filedUnder(ctx context.Context, k brainwire.IdempotencyKey) *brainwire.Replay {
	if k.ItemID == "" {
		return nil
	}
	item, err := s.cfg.Store.GetInboxItem(ctx, k.UserID, k.ItemID)
	if err != nil {
		if brainwire.ErrorCode(err) != brainwire.ENotFound {
			s.log.Error("looking for the item of an idempotency key taken over", "inbox_item_id", k.ItemID, "user", k.UserID, "error", err)
		}
		return nil
	}
	return item.FiledUnderKey(k.Key)
}

// replay answers a repeated request with its capture's outcome, in the
// request's protocol: the same item, no agent run, no filing.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, rp brainwire.Replay, newEncoder func(brainwire.Capture) encoder) {
	c := rp.Capture(userFrom(r.Context()))
	res := rp.Result()
	w.Header().Set(headerReplayed, "true")
	stream := startStream(w, s.cfg.KeepAlive)
	defer stream.close()
	enc := newEncoder(c)
	var buf []byte
	for _, ev := range adapter.Replay(c, &res, nil) {
		buf = enc.Encode(buf, ev)
	}
	_ = stream.write(buf)
	if ro, ok := s.cfg.Observer.(brainwire.ReplayObserver); ok {
		ro.CaptureReplayed(r.Context(), c, res)
	}
	s.log.Info("capture replayed", "run_id", c.RunID, "thread_id", c.ThreadID, "kind", c.Kind, "user", c.UserID,
		"outcome", res.Outcome, "inbox_item_id", res.InboxItemID)
}

// ended is told how capture c ended under the key, and whether its filing
// settled the key: it settles the key, unless the hold is afterRound.
func (h *keyHold) ended(ctx context.Context, c brainwire.Capture, res brainwire.CaptureResult, filed bool) {
	if h == nil {
		return
	}
	h.filed = filed
	if !h.afterRound {
		h.settle(ctx, c, res)
	}
}

// settle records how capture c ended under the key, unless its filing
// did: its outcome to replay when it reached the store, else the key goes
// back for a retry to run afresh. Done also when the client has gone,
// hence a context of its own.
func (h *keyHold) settle(ctx context.Context, c brainwire.Capture, res brainwire.CaptureResult) {
	if h == nil || h.settled {
		return
	}
	h.settled = true
	if h.filed {
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
		s.log.Error("releasing the idempotency key", "run_id", c.RunID, "user", h.key.UserID, "error", err)
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
		s.log.Error("recording the capture's outcome under its idempotency key", "run_id", runID, "user", h.key.UserID, "error", err)
	}
}

// release gives the key back when the request ended before its capture
// ran (a refused follow-up round, audio that could not be stored).
func (h *keyHold) release(ctx context.Context) {
	h.settle(ctx, brainwire.Capture{}, brainwire.CaptureResult{})
}
