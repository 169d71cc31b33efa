package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

var keyTests = []test{
	{"ClaimOnce", testKeyClaimOnce},
	{"ConcurrentClaims", func(t *testing.T, e *env) { e.raceClaims(at(0), e.s) }},
	{"ConcurrentTakeovers", testKeyConcurrentTakeovers},
	{"FinishReplays", testKeyFinishReplays},
	{"LapsedClaimIsTakenOver", testKeyLapsedClaim},
	{"TakeoverOfAnotherRequest", testKeyTakeoverOfAnotherRequest},
	{"FilingSettlesTheKey", testKeyFilingSettles},
	{"RefilingSettlesTheKey", testKeyRefilingSettles},
	{"FilingRefusedOnceTakenOver", testKeyFilingTakenOver},
	{"DoneKeyLapses", testKeyDoneLapses},
	{"Release", testKeyRelease},
	{"Users", testKeyUsers},
	{"Invalid", testKeyInvalid},
}

// keyLease is how long the suite's running claims stand.
const keyLease = 90 * time.Second

// keys returns the store's idempotency keys: the server needs them for
// the Idempotency-Key header, so every store keeps them.
func (e *env) keys() brainwire.IdempotencyStore {
	ks, ok := e.s.(brainwire.IdempotencyStore)
	if !ok {
		e.t.Fatal("the store keeps no idempotency keys (brainwire.IdempotencyStore)")
	}
	return ks
}

// keyClaim returns a running claim of key made at at.
func (e *env) keyClaim(key, fingerprint string, at time.Time) brainwire.IdempotencyKey {
	return brainwire.IdempotencyKey{UserID: e.user, Key: key, Fingerprint: fingerprint, Token: newID("token"),
		State: brainwire.KeyRunning, At: at, Until: at.Add(keyLease), ItemID: newID("inbox")}
}

func (e *env) claimKey(k brainwire.IdempotencyKey) (brainwire.IdempotencyKey, bool) {
	e.t.Helper()
	got, ok, err := e.keys().ClaimKey(e.ctx, k)
	if err != nil {
		e.t.Fatalf("ClaimKey(%s): %v", k.Key, err)
	}
	return got, ok
}

func testKeyClaimOnce(t *testing.T, e *env) {
	first := e.keyClaim("key-1", "fp-a", at(0))
	got, ok := e.claimKey(first)
	if !ok {
		t.Fatalf("the first claim of a key did not get it: %+v", got)
	}
	check(t, "the claim", got, first)
	// A repeat, with the same request or another, finds the first claim.
	for _, fp := range []string{"fp-a", "fp-b"} {
		again := e.keyClaim("key-1", fp, at(10))
		got, ok = e.claimKey(again)
		if ok {
			t.Fatalf("a repeat (%s) claimed a key another claim holds", fp)
		}
		check(t, "the standing claim", got, first)
	}
	// Another key is another claim.
	if _, ok := e.claimKey(e.keyClaim("key-2", "fp-a", at(11))); !ok {
		t.Error("a second key was refused")
	}
}

// A lapsed claim, taken over by racing repeats, goes to one of them.
func testKeyConcurrentTakeovers(t *testing.T, e *env) {
	k := e.keyClaim("racing", "fp", at(0))
	e.claimKey(k)
	e.raceClaims(k.Until, e.s)
}

// raceClaims makes concurrent claims of one key at t0, spread over
// stores: one gets it, and every other sees the winner's claim.
func (e *env) raceClaims(t0 time.Time, stores ...brainwire.Store) {
	claims, got := make([]brainwire.IdempotencyKey, 8), make([]brainwire.IdempotencyKey, 8)
	for i := range claims {
		claims[i] = e.keyClaim("racing", "fp", t0)
	}
	winner := race(e.t, len(claims), func(i int) bool {
		k, won, err := stores[i%len(stores)].(brainwire.IdempotencyStore).ClaimKey(e.ctx, claims[i])
		if err != nil {
			e.t.Errorf("claim %d: %v", i, err)
		}
		got[i] = k
		return won
	})
	for i := range got {
		if got[i].Token != claims[winner].Token {
			e.t.Errorf("claim %d sees the key held by %q, want the winner's %q", i, got[i].Token, claims[winner].Token)
		}
	}
}

// finished is k as its capture finished at at.
func finished(k brainwire.IdempotencyKey, at time.Time) brainwire.IdempotencyKey {
	k.State, k.At, k.Until = brainwire.KeyDone, at, at.Add(brainwire.KeyLifetime)
	k.Replay = &brainwire.Replay{Kind: brainwire.KindFollowUp, ThreadID: "thread-1", RunID: "run-1", FollowUpRound: 2,
		Outcome: brainwire.OutcomeMisunderstood, InboxItemID: "item-1", Bucket: "Ideas", Confidence: 0.25,
		Question: "Which “Sam”? ✓", UpstreamThreadID: "thread_up"}
	return k
}

func testKeyFinishReplays(t *testing.T, e *env) {
	k := e.keyClaim("key", "fp", at(0))
	e.claimKey(k)
	done := finished(k, at(5))
	if err := e.keys().FinishKey(e.ctx, done); err != nil {
		t.Fatalf("FinishKey: %v", err)
	}
	// A day later, less a second, a repeat still finds the outcome.
	got, ok := e.claimKey(e.keyClaim("key", "fp", at(5).Add(brainwire.KeyLifetime-time.Second)))
	if ok {
		t.Fatal("a repeat claimed a finished key")
	}
	check(t, "the finished key", got, done)
	// Finishing twice is refused: the claim is no longer running.
	if err := e.keys().FinishKey(e.ctx, done); brainwire.ErrorCode(err) != brainwire.EConflict {
		t.Errorf("finishing a finished key: %v, want %s", err, brainwire.EConflict)
	}
	// And a finished key is not released.
	if err := e.keys().ReleaseKey(e.ctx, e.user, "key", k.Token); err != nil {
		t.Fatalf("ReleaseKey: %v", err)
	}
	if _, ok := e.claimKey(e.keyClaim("key", "fp", at(6))); ok {
		t.Error("releasing a finished key dropped it")
	}
}

func testKeyLapsedClaim(t *testing.T, e *env) {
	k := e.keyClaim("key", "fp", at(0))
	e.claimKey(k)
	// A replica died mid-run: once the lease is over, a repeat takes over.
	over := e.keyClaim("key", "fp", k.Until)
	got, ok := e.claimKey(over)
	if !ok {
		t.Fatalf("a lapsed claim was not taken over: %+v", got)
	}
	// The dead run may have filed: the new claim knows to look.
	over.TookOver = true
	check(t, "the new claim", got, over)
	// The lapsed run can neither finish nor release the key any more.
	if err := e.keys().FinishKey(e.ctx, finished(k, k.Until)); brainwire.ErrorCode(err) != brainwire.EConflict {
		t.Errorf("finishing a claim taken over: %v, want %s", err, brainwire.EConflict)
	}
	if err := e.keys().ReleaseKey(e.ctx, e.user, "key", k.Token); err != nil {
		t.Fatalf("ReleaseKey: %v", err)
	}
	if got, ok := e.claimKey(e.keyClaim("key", "fp", k.Until.Add(time.Second))); ok || got.Token != over.Token {
		t.Errorf("after the lapsed run's release, the key is %+v (claimed %v), want the new claim", got, ok)
	}
	if err := e.keys().FinishKey(e.ctx, finished(over, k.Until.Add(2*time.Second))); err != nil {
		t.Errorf("finishing the claim that took over: %v", err)
	}
}

func testKeyTakeoverOfAnotherRequest(t *testing.T, e *env) {
	k := e.keyClaim("key", "fp", at(0))
	e.claimKey(k)
	// The key reused for another request once the claim lapsed: that
	// request's run filed nothing of this one.
	other := e.keyClaim("key", "another fp", k.Until)
	got, ok := e.claimKey(other)
	if !ok {
		t.Fatalf("a lapsed claim was not taken over: %+v", got)
	}
	check(t, "the claim of another request", got, other)
	// Nor is anything of a finished key past its lifetime.
	done := finished(other, k.Until)
	if err := e.keys().FinishKey(e.ctx, done); err != nil {
		t.Fatal(err)
	}
	fresh := e.keyClaim("key", "another fp", done.Until)
	if got, _ = e.claimKey(fresh); got.TookOver {
		t.Errorf("a claim after a finished key's lifetime took it over: %+v", got)
	}
}

// keyedFiling is f filed under k, as a capture's run files it: into k's
// item, settling k with what the phone is told.
func keyedFiling(f brainwire.Filing, k brainwire.IdempotencyKey) brainwire.Filing {
	if f.InboxItemID == "" {
		f.NewInboxID = k.ItemID
	}
	done := k.Done(brainwire.Replay{Kind: brainwire.KindText, ThreadID: "thread-1", RunID: "run-1",
		Outcome: brainwire.OutcomeOfStatus(f.Status), InboxItemID: k.ItemID, Bucket: f.Classification.Bucket,
		Confidence: f.Classification.Confidence, UpstreamThreadID: f.UpstreamThreadID}, f.Now)
	f.Key = &done
	return f
}

func testKeyFilingSettles(t *testing.T, e *env) {
	for _, status := range []string{brainwire.StatusClassified, brainwire.StatusMisunderstood, brainwire.StatusUnresolved} {
		t.Run(status, func(t *testing.T) {
			k := e.keyClaim(newID("key"), "fp", at(0))
			e.claimKey(k)
			bucket := brainwire.BucketPeople
			if status == brainwire.StatusUnresolved {
				bucket = ""
			}
			f := keyedFiling(e.filing(status, bucket), k)
			item := e.file(f)
			check(t, "the item filed under a key", item, filed(f))
			// A repeat, from now on, replays what the filing's phone was
			// told: the key is done, or the item it names says so.
			got, claimed := e.claimKey(e.keyClaim(k.Key, "fp", f.Now.Add(time.Second)))
			switch {
			case !claimed:
				check(t, "the key after its filing", got, *f.Key)
			case got.TookOver:
				if rp := e.get(item.ID).FiledUnderKey(k.Key); rp == nil || *rp != *f.Key.Replay {
					t.Errorf("the key taken over names item %s, which replays %+v, want %+v", item.ID, rp, *f.Key.Replay)
				}
			default:
				t.Errorf("a repeat after the filing claimed the key afresh: %+v", got)
			}
		})
	}
}

func testKeyRefilingSettles(t *testing.T, e *env) {
	before := e.file(e.filing(brainwire.StatusMisunderstood, ""))
	k := e.keyClaim("key", "fp", at(5))
	k.ItemID = before.ID
	e.claimKey(k)
	f := e.filing(brainwire.StatusClassified, brainwire.BucketIdeas)
	f.InboxItemID, f.FollowUpRound = before.ID, 1
	f = keyedFiling(f, k)
	item, err := e.s.File(e.ctx, f)
	if err != nil {
		t.Fatalf("File: %v", err)
	}
	check(t, "the item refiled under a key", e.get(item.ID), refiled(before, f))
	if got, claimed := e.claimKey(e.keyClaim("key", "fp", f.Now.Add(time.Second))); claimed && !got.TookOver {
		t.Errorf("a repeat after the refiling claimed the key afresh: %+v", got)
	}
}

func testKeyFilingTakenOver(t *testing.T, e *env) {
	k := e.keyClaim("key", "fp", at(0))
	e.claimKey(k)
	took := e.keyClaim("key", "fp", k.Until)
	took.ItemID = k.ItemID
	over, _ := e.claimKey(took)
	// The first run comes back to life and files: the key is no longer
	// its own, so the filing is the repeat's to make.
	f := keyedFiling(e.filing(brainwire.StatusClassified, brainwire.BucketAdmin), k)
	f.Now = k.Until.Add(time.Second)
	if _, err := e.s.File(e.ctx, f); !errors.Is(err, brainwire.ErrKeyTakenOver) {
		t.Fatalf("filing under a key taken over: %v, want ErrKeyTakenOver", err)
	}
	if _, err := e.s.GetInboxItem(e.ctx, e.user, f.NewInboxID); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Errorf("the refused filing left item %s: %v", f.NewInboxID, err)
	}
	if _, err := e.s.GetBucketRecord(e.ctx, e.user, brainwire.BucketAdmin, f.NewRecordID); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Errorf("the refused filing left its bucket record: %v", err)
	}
	// The run holding the key files it.
	f2 := keyedFiling(e.filing(brainwire.StatusClassified, brainwire.BucketAdmin), over)
	f2.Now = f.Now.Add(time.Second)
	e.file(f2)
}

func testKeyDoneLapses(t *testing.T, e *env) {
	k := e.keyClaim("key", "fp", at(0))
	e.claimKey(k)
	done := finished(k, at(1))
	if err := e.keys().FinishKey(e.ctx, done); err != nil {
		t.Fatal(err)
	}
	fresh := e.keyClaim("key", "fp", done.Until)
	got, ok := e.claimKey(fresh)
	if !ok {
		t.Fatalf("a key past its lifetime was not claimed afresh: %+v", got)
	}
	check(t, "the fresh claim", got, fresh)
}

func testKeyRelease(t *testing.T, e *env) {
	k := e.keyClaim("key", "fp", at(0))
	e.claimKey(k)
	// Another token's release leaves the claim.
	if err := e.keys().ReleaseKey(e.ctx, e.user, "key", "not-the-token"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.claimKey(e.keyClaim("key", "fp", at(1))); ok {
		t.Fatal("another token's release dropped the claim")
	}
	if err := e.keys().ReleaseKey(e.ctx, e.user, "key", k.Token); err != nil {
		t.Fatal(err)
	}
	again := e.keyClaim("key", "fp", at(2))
	if _, ok := e.claimKey(again); !ok {
		t.Fatal("a released key was not claimed again")
	}
	// Releasing a key that is not there is no error.
	if err := e.keys().ReleaseKey(e.ctx, e.user, "absent", "token"); err != nil {
		t.Errorf("releasing an absent key: %v", err)
	}
}

func testKeyUsers(t *testing.T, e *env) {
	k := e.keyClaim("shared-name", "fp", at(0))
	e.claimKey(k)
	other := k
	other.UserID, other.Token = newID("user"), newID("token")
	got, ok, err := e.keys().ClaimKey(e.ctx, other)
	if err != nil || !ok {
		t.Fatalf("another user's key of the same name: claimed %v, %+v, %v", ok, got, err)
	}
	// Neither user's release touches the other's key.
	if err := e.keys().ReleaseKey(e.ctx, other.UserID, "shared-name", k.Token); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.claimKey(e.keyClaim("shared-name", "fp", at(1))); ok {
		t.Error("another user's release dropped the key")
	}
}

func testKeyInvalid(t *testing.T, e *env) {
	good := e.keyClaim("key", "fp", at(0))
	for name, k := range map[string]brainwire.IdempotencyKey{
		"no user":        func() brainwire.IdempotencyKey { k := good; k.UserID = ""; return k }(),
		"no key":         func() brainwire.IdempotencyKey { k := good; k.Key = ""; return k }(),
		"no token":       func() brainwire.IdempotencyKey { k := good; k.Token = ""; return k }(),
		"no fingerprint": func() brainwire.IdempotencyKey { k := good; k.Fingerprint = ""; return k }(),
		"no time span":   func() brainwire.IdempotencyKey { k := good; k.Until = k.At; return k }(),
	} {
		if _, _, err := e.keys().ClaimKey(e.ctx, k); brainwire.ErrorCode(err) != brainwire.EInvalid {
			t.Errorf("%s: %v, want %s", name, err, brainwire.EInvalid)
		}
	}
	if err := e.keys().ReleaseKey(e.ctx, "", "key", "token"); brainwire.ErrorCode(err) != brainwire.EInvalid {
		t.Errorf("release without a user: %v, want %s", err, brainwire.EInvalid)
	}
}
