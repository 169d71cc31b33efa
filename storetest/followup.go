package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

var claimTests = []test{
	{"ClaimOnce", testClaimOnce},
	{"ConcurrentClaims", testConcurrentClaims},
	{"ClaimRefusals", testClaimRefusals},
	{"ClaimLapses", testClaimLapses},
	{"Release", testRelease},
	{"RefileAnswersTheClaim", testRefileAnswersTheClaim},
	{"RefileWithoutTheClaim", testRefileWithoutTheClaim},
	{"RefileAfterTheClaimWasTaken", testRefileAfterTheClaimWasTaken},
	{"RefileAfterOwnClaimLapsed", testRefileAfterOwnClaimLapsed},
	{"RecategorizeDropsTheClaim", testRecategorizeDropsTheClaim},
	{"ClaimCanceledContext", testClaimCanceledContext},
}

// claimSpan is how long the suite's claims stand.
const claimSpan = time.Minute

// claim returns a claim of round made at the time of the next filing.
func (e *env) claim(round int) brainwire.FollowUpClaim {
	at := at(e.n)
	e.n++
	return brainwire.FollowUpClaim{Round: round, Token: newID("claim"), At: at, Until: at.Add(claimSpan)}
}

// misunderstood files a misunderstood capture, ready to be followed up.
func (e *env) misunderstood() brainwire.InboxItem {
	return e.file(e.filing(brainwire.StatusMisunderstood, ""))
}

// claimed is before as claimed by c.
func claimed(before brainwire.InboxItem, c brainwire.FollowUpClaim) brainwire.InboxItem {
	before.FollowUpClaim = &c
	return before
}

func (e *env) claimOK(item brainwire.InboxItem, c brainwire.FollowUpClaim) brainwire.InboxItem {
	e.t.Helper()
	got, err := e.s.ClaimFollowUp(e.ctx, e.user, item.ID, c)
	if err != nil {
		e.t.Fatalf("ClaimFollowUp(round %d): %v", c.Round, err)
	}
	check(e.t, "claimed item", got, claimed(item, c))
	exact(e.t, "ClaimFollowUp result vs stored item", got, e.get(item.ID))
	return got
}

func testClaimOnce(t *testing.T, e *env) {
	item := e.misunderstood()
	first := e.claim(1)
	e.claimOK(item, first)

	second := e.claim(1)
	_, err := e.s.ClaimFollowUp(e.ctx, e.user, item.ID, second)
	checkCode(t, "a second claim of the same round", err, brainwire.EConflict)
	check(t, "item after the refused claim", e.get(item.ID), claimed(item, first))
}

// Claims racing on one item: exactly one is granted, whatever the timing.
func testConcurrentClaims(t *testing.T, e *env) { e.raceFollowUps(e.misunderstood(), e.s) }

// raceFollowUps makes claims of item's first round at once, spread over
// stores: exactly one is granted, and the item holds it after.
func (e *env) raceFollowUps(item brainwire.InboxItem, stores ...brainwire.Store) {
	claims := make([]brainwire.FollowUpClaim, 8)
	for i := range claims {
		claims[i] = brainwire.FollowUpClaim{Round: 1, Token: newID("claim"), At: at(e.n), Until: at(e.n).Add(claimSpan)}
	}
	winner := race(e.t, len(claims), func(i int) bool {
		_, err := stores[i%len(stores)].ClaimFollowUp(e.ctx, e.user, item.ID, claims[i])
		if err != nil && brainwire.ErrorCode(err) != brainwire.EConflict {
			e.t.Errorf("claim %d: %v, want success or %s", i, err, brainwire.EConflict)
		}
		return err == nil
	})
	check(e.t, "item after the race", e.get(item.ID), claimed(item, claims[winner]))
}

func testClaimRefusals(t *testing.T, e *env) {
	m := e.misunderstood()
	noThread := e.filing(brainwire.StatusMisunderstood, "")
	noThread.UpstreamThreadID = ""
	threadless := e.file(noThread)
	classified := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketIdeas))
	unresolved := e.file(e.filing(brainwire.StatusUnresolved, ""))
	spent := m
	for round := 1; round <= brainwire.MaxFollowUpRounds; round++ {
		spent = e.file(e.refiling(spent, brainwire.StatusMisunderstood, ""))
	}
	fresh := e.misunderstood()

	valid := e.claim(1)
	for _, c := range []struct {
		name   string
		id     string
		user   string
		mutate func(*brainwire.FollowUpClaim)
		want   string
	}{
		{"not misunderstood", classified.ID, e.user, nil, brainwire.EConflict},
		{"unresolved", unresolved.ID, e.user, nil, brainwire.EConflict},
		{"no agent conversation", threadless.ID, e.user, nil, brainwire.EConflict},
		{"skips a round", fresh.ID, e.user, func(c *brainwire.FollowUpClaim) { c.Round = 2 }, brainwire.EConflict},
		{"past the last round", spent.ID, e.user, func(c *brainwire.FollowUpClaim) { c.Round = brainwire.MaxFollowUpRounds }, brainwire.EConflict},
		{"round 0", fresh.ID, e.user, func(c *brainwire.FollowUpClaim) { c.Round = 0 }, brainwire.EInvalid},
		{"no token", fresh.ID, e.user, func(c *brainwire.FollowUpClaim) { c.Token = "" }, brainwire.EInvalid},
		{"empty span", fresh.ID, e.user, func(c *brainwire.FollowUpClaim) { c.Until = c.At }, brainwire.EInvalid},
	} {
		cl := valid
		if c.mutate != nil {
			c.mutate(&cl)
		}
		_, err := e.s.ClaimFollowUp(e.ctx, c.user, c.id, cl)
		checkCode(t, c.name, err, c.want)
	}
	for _, it := range []brainwire.InboxItem{threadless, classified, unresolved, spent, fresh} {
		check(t, "item after refused claims", e.get(it.ID), it)
	}
}

// A claim whose run never ended (a replica that died) lapses at Until.
func testClaimLapses(t *testing.T, e *env) {
	item := e.misunderstood()
	first := e.claim(1)
	e.claimOK(item, first)
	later := brainwire.FollowUpClaim{Round: 1, Token: newID("claim"), At: first.Until, Until: first.Until.Add(claimSpan)}
	e.claimOK(item, later)
}

func testRelease(t *testing.T, e *env) {
	item := e.misunderstood()
	first := e.claim(1)
	e.claimOK(item, first)

	// Another run's token releases nothing.
	if err := e.s.ReleaseFollowUp(e.ctx, e.user, item.ID, newID("claim")); err != nil {
		t.Fatalf("ReleaseFollowUp with another token: %v", err)
	}
	check(t, "item after a release with another token", e.get(item.ID), claimed(item, first))

	if err := e.s.ReleaseFollowUp(e.ctx, e.user, item.ID, first.Token); err != nil {
		t.Fatalf("ReleaseFollowUp: %v", err)
	}
	check(t, "released item", e.get(item.ID), item)
	// Releasing again, or on an item that is gone, is not an error.
	if err := e.s.ReleaseFollowUp(e.ctx, e.user, item.ID, first.Token); err != nil {
		t.Errorf("second ReleaseFollowUp: %v", err)
	}
	if err := e.s.ReleaseFollowUp(e.ctx, e.user, newID("inbox"), first.Token); err != nil {
		t.Errorf("ReleaseFollowUp of an unknown item: %v", err)
	}
	// The round can be tried again.
	e.claimOK(item, e.claim(1))
}

func testRefileAnswersTheClaim(t *testing.T, e *env) {
	item := e.misunderstood()
	c := e.claim(1)
	e.claimOK(item, c)
	f := e.refiling(item, brainwire.StatusMisunderstood, "")
	f.ClaimToken = c.Token
	got := e.file(f)
	check(t, "refiled item", got, refiled(item, f)) // no claim left
	if got.FollowUpRounds != 1 {
		t.Errorf("FollowUpRounds = %d, want 1", got.FollowUpRounds)
	}
	// The next round is open.
	e.claimOK(got, e.claim(2))
}

func testRefileWithoutTheClaim(t *testing.T, e *env) {
	item := e.misunderstood()
	c := e.claim(1)
	held := e.claimOK(item, c)
	for name, token := range map[string]string{"no token": "", "another token": newID("claim")} {
		f := e.refiling(item, brainwire.StatusClassified, brainwire.BucketPeople)
		f.ClaimToken = token
		_, err := e.s.File(e.ctx, f)
		checkCode(t, "refile with "+name, err, brainwire.EConflict)
		e.noRecord(f.NewRecordID)
	}
	check(t, "item", e.get(item.ID), held)
}

func testRefileAfterTheClaimWasTaken(t *testing.T, e *env) {
	item := e.misunderstood()
	first := e.claim(1)
	e.claimOK(item, first)
	second := brainwire.FollowUpClaim{Round: 1, Token: newID("claim"), At: first.Until, Until: first.Until.Add(claimSpan)}
	held := e.claimOK(item, second)

	late := e.refiling(item, brainwire.StatusClassified, brainwire.BucketPeople)
	late.ClaimToken, late.Now = first.Token, second.At.Add(time.Second)
	_, err := e.s.File(e.ctx, late)
	checkCode(t, "refile by the run whose claim lapsed", err, brainwire.EConflict)
	e.noRecord(late.NewRecordID)
	check(t, "item", e.get(item.ID), held)

	f := e.refiling(item, brainwire.StatusClassified, brainwire.BucketPeople)
	f.ClaimToken, f.Now = second.Token, second.At.Add(2*time.Second)
	got := e.file(f)
	check(t, "refiled item", got, refiled(item, f))
}

// A run whose claim lapsed with nobody taking the round still files.
func testRefileAfterOwnClaimLapsed(t *testing.T, e *env) {
	item := e.misunderstood()
	c := e.claim(1)
	e.claimOK(item, c)
	f := e.refiling(item, brainwire.StatusPending, brainwire.BucketAdmin)
	f.ClaimToken, f.Now = c.Token, c.Until.Add(time.Second)
	got := e.file(f)
	check(t, "refiled item", got, refiled(item, f))
}

// The person's choice wins over a follow-up in flight: its claim goes, and
// its filing is refused afterwards.
func testRecategorizeDropsTheClaim(t *testing.T, e *env) {
	item := e.misunderstood()
	c := e.claim(1)
	e.claimOK(item, c)
	now := at(e.n)
	e.n++
	got, err := e.s.Recategorize(e.ctx, e.user, item.ID, brainwire.BucketIdeas, newID("rec"), "user", now)
	if err != nil {
		t.Fatalf("Recategorize: %v", err)
	}
	if got.FollowUpClaim != nil || e.get(item.ID).FollowUpClaim != nil {
		t.Errorf("the claim survived Recategorize: %+v", got.FollowUpClaim)
	}
	f := e.refiling(item, brainwire.StatusClassified, brainwire.BucketPeople)
	f.ClaimToken = c.Token
	_, err = e.s.File(e.ctx, f)
	checkCode(t, "refile after Recategorize", err, brainwire.EConflict)
	e.noRecord(f.NewRecordID)
	if it := e.get(item.ID); it.Status != brainwire.StatusClassified || it.ClassificationMeta.Bucket != brainwire.BucketIdeas {
		t.Errorf("item after the refused refile: %s in %s", it.Status, it.ClassificationMeta.Bucket)
	}
}

func testClaimCanceledContext(t *testing.T, e *env) {
	item := e.misunderstood()
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := e.s.ClaimFollowUp(ctx, e.user, item.ID, e.claim(1))
	checkCanceled(t, "ClaimFollowUp with a cancelled context", err)
	check(t, "item", e.get(item.ID), item)
	err = e.s.ReleaseFollowUp(ctx, e.user, item.ID, "x")
	if err == nil {
		t.Error("ReleaseFollowUp with a cancelled context succeeded")
	}
}
