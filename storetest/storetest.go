// Package storetest is the conformance suite every brainwire.Store must pass.
// A backend's own tests call Run with a function that opens a fresh, empty
// store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) brainwire.Store {
//			s, err := mystore.Open(t.Context(), ...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// open owns the store's lifetime: it must arrange for Close (t.Cleanup).
//
// Beyond what the Store interface's doc comments say, the suite pins these
// behaviours, which the HTTP and tool layers rely on. Its expected values
// are written from these rules, never from the root package's builders
// that the stores share (Filing.NewItem, Filing.Refile, InboxItem.Record),
// so that a mistake in those shows:
//
//   - Times come back in UTC and equal what was given to the millisecond. The
//     item File or Recategorize returns is exactly what GetInboxItem returns
//     afterwards.
//   - A new filing stores Filing.Classification as the item's
//     ClassificationMeta whatever its status. A bucket record carries its
//     item's raw text, title and classification, and CreatedAt = Filing.Now.
//   - A refile (Filing.InboxItemID set) keeps the item's ID, Source and
//     CreatedAt; replaces RawText, Title, Status, ClassificationMeta,
//     FiledRecordID and UpdatedAt; keeps UpstreamThreadID when the filing names
//     none; and deletes the bucket record the item had, if any.
//   - Recategorize keeps a moved record's ID and CreatedAt, keeps the
//     classification's confidence, scores and agent chain, and sets Bucket,
//     ClassifiedBy, ClassifiedAt = now, Status classified and UpdatedAt = now.
//   - ListInbox orders by CreatedAt, newest first (refiling or
//     recategorizing does not move an item); the default page size is
//     brainwire.DefaultPageSize and larger limits are cut to
//     brainwire.MaxPageSize; NextCursor is empty on the page holding the
//     last item.
//   - An item keeps the AgentRun of the filing that made it; a refile
//     replaces it with its own (keeps it when it brings none), and
//     Recategorize keeps it as it was. Items filed without one read back
//     with none.
//   - An unresolved filing (StatusUnresolved) is a new item in no bucket
//     and without a bucket record, listed under its status; Recategorize
//     files it like a misunderstood item, and ClaimFollowUp refuses it.
//   - A store that is a brainwire.UserLister lists every user with an item.
//   - A store that is a brainwire.ShadowStore keeps a trial on its item for
//     every read of it, replacing an earlier one and changing nothing else
//     (UpdatedAt too); Recategorize and a refile keep it, also when they
//     meet RecordShadow at once, and it keeps theirs. Items without a trial
//     read back with none.
//   - ClaimFollowUp grants a round to one claim at a time, also to claims
//     made concurrently; a claim stands until its Until, its token's
//     filing, ReleaseFollowUp with its token, or a Recategorize. The
//     claimed item is otherwise unchanged (UpdatedAt too).
//   - A store that is a brainwire.IdempotencyStore grants a key to one
//     claim at a time, also to claims made concurrently, until its Until;
//     a finished key reads back as it was finished, times in UTC; keys are
//     the user's own.
//   - Both grants hold across stores over the same data, as the server's
//     replicas are: RunReplicas races claims on two of them.
//   - Codes: EInvalid for malformed input (empty user id, unknown status or
//     bucket, a new capture without NewInboxID or with a source other than
//     text or voice, a classified or pending filing without NewRecordID, a
//     zero Now, a negative limit, a malformed cursor); ENotFound for absent
//     documents and other users' documents; EConflict when an id is taken.
//     A cancelled context's error stays in the returned error's chain.
package storetest

import (
	"sync"
	"testing"

	"github.com/brainwire/brainwire"
)

// Run runs the conformance suite. Each subtest calls open for a fresh, empty
// store; subtests run one after another.
func Run(t *testing.T, open func(t *testing.T) brainwire.Store) {
	t.Helper()
	groups := []struct {
		name  string
		tests []test
	}{
		{"File", fileTests},
		{"Refile", refileTests},
		{"Get", getTests},
		{"ListInbox", listTests},
		{"Delete", deleteTests},
		{"Recategorize", recategorizeTests},
		{"FollowUpClaims", claimTests},
		{"IdempotencyKeys", keyTests},
		{"Isolation", isolationTests},
		{"Ping", pingTests},
		{"Users", userTests},
		{"Shadow", shadowTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.run(t, newEnv(t, open(t)))
				})
			}
		})
	}
}

// RunReplicas runs the races of the suite on two stores over the same
// data, as two replicas of the server are: open returns both, fresh and
// empty, and owns their lifetime.
func RunReplicas(t *testing.T, open func(t *testing.T) (a, b brainwire.Store)) {
	t.Helper()
	t.Run("FollowUpClaims", func(t *testing.T) {
		a, b := open(t)
		e := newEnv(t, a)
		for range 5 {
			e.raceFollowUps(e.misunderstood(), a, b)
		}
	})
	t.Run("Filing", func(t *testing.T) {
		a, b := open(t)
		e := newEnv(t, a)
		e.fileConcurrently(a, b)
	})
	t.Run("IdempotencyKeys", func(t *testing.T) {
		a, b := open(t)
		e := newEnv(t, a)
		e.keys()
		e.raceClaims(at(0), a, b)
		// A lapsed claim, taken over by repeats on both.
		e.raceClaims(at(0).Add(keyLease), a, b)
	})
}

type test struct {
	name string
	run  func(t *testing.T, e *env)
}

// race runs try(i) for every i < n at once and returns the one that won,
// failing the test unless exactly one did.
func race(t *testing.T, n int, try func(i int) bool) int {
	t.Helper()
	won := make([]bool, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			won[i] = try(i)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, w := range won {
		if w && winner >= 0 {
			t.Fatalf("attempts %d and %d both won", winner, i)
		}
		if w {
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no attempt won")
	}
	return winner
}
