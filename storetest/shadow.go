package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

// A store that is a brainwire.ShadowStore keeps a shadow trial on its item
// for every read of it (GetInboxItem, ListInbox, and the item Recategorize
// and a refile return), replaces an earlier one, and changes nothing else:
// UpdatedAt stays. A recategorize or a follow-up's refile keeps the trial,
// and a trial keeps the person's bucket, also when the two meet at once.
var shadowTests = []test{
	{"EveryRead", testShadowEveryRead},
	{"Replaces", testShadowReplaces},
	{"Absent", testShadowAbsent},
	{"ZeroTime", testShadowZeroTime},
	{"RecategorizeKeepsIt", testShadowRecategorizeKeepsIt},
	{"AfterRecategorize", testShadowAfterRecategorize},
	{"RefileKeepsIt", testShadowRefileKeepsIt},
	{"Concurrently", testShadowConcurrently},
}

// shadows returns e's store as a ShadowStore, skipping the test when it
// keeps no trials.
func (e *env) shadows() brainwire.ShadowStore {
	e.t.Helper()
	ss, ok := e.s.(brainwire.ShadowStore)
	if !ok {
		e.t.Skip("the store keeps no shadow trials")
	}
	return ss
}

// trial is a shadow trial of item's capture by candidate version v, with
// every field set, at a time that is neither UTC nor a whole millisecond.
func trial(item brainwire.InboxItem, v string, i int) brainwire.ShadowTrial {
	return brainwire.ShadowTrial{
		Candidate: brainwire.AgentRun{RunID: fmt.Sprintf("shadow-run-%d", i), AgentVersion: v, InstructionsHash: "9e1d2c7a55b0",
			Model: "gpt-4o-mini", Outcome: brainwire.OutcomeLowConfidence, Bucket: brainwire.BucketAdmin, Confidence: 0.625,
			TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: fmt.Sprintf("00f067aa0ba902%02x", i%256)},
		Production:          brainwire.AgentRun{RunID: "prod-run", Outcome: brainwire.OutcomeClassified, Bucket: brainwire.BucketPeople, Confidence: 0.91},
		CandidateReasoning:  "Looks like an errand — “renew the permit” ✓",
		ProductionReasoning: "Zoë is a person;\nthe capture is about her.",
		At:                  at(50 + i).Add(123_456 * time.Nanosecond),
	}
}

// recordShadow keeps t on item and checks that every read of the item is item
// with t: GetInboxItem and ListInbox.
func (e *env) recordShadow(item brainwire.InboxItem, t brainwire.ShadowTrial) brainwire.InboxItem {
	e.t.Helper()
	if err := e.shadows().RecordShadow(e.ctx, e.user, item.ID, t); err != nil {
		e.t.Fatalf("RecordShadow(%s): %v", item.ID, err)
	}
	want := item
	want.Shadow = &t
	e.checkReads(want)
	return want
}

// checkReads checks that GetInboxItem and ListInbox read want.
func (e *env) checkReads(want brainwire.InboxItem) {
	e.t.Helper()
	check(e.t, "GetInboxItem", e.get(want.ID), want)
	items, _ := e.listAll(brainwire.ListOptions{})
	for _, it := range items {
		if it.ID == want.ID {
			check(e.t, "ListInbox", it, want)
			return
		}
	}
	e.t.Errorf("ListInbox: %s not listed", want.ID)
}

func testShadowEveryRead(t *testing.T, e *env) {
	without := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketIdeas))
	item := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	if item.Shadow != nil {
		t.Fatalf("a new item has a trial: %+v", item.Shadow)
	}
	e.recordShadow(item, trial(item, "cand-1", 1))
	e.checkReads(without) // Shadow nil
}

func testShadowReplaces(t *testing.T, e *env) {
	item := e.file(e.filing(brainwire.StatusPending, brainwire.BucketIdeas))
	e.recordShadow(item, trial(item, "cand-1", 1))
	second := trial(item, "cand-2", 2)
	second.Candidate.Outcome, second.Candidate.Bucket, second.CandidateReasoning = brainwire.OutcomeMisunderstood, "", ""
	e.recordShadow(item, second)
}

// An unknown item, or another user's, is not found, and the other user's
// item is left as it was.
func testShadowAbsent(t *testing.T, e *env) {
	ss := e.shadows()
	item := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	checkCode(t, "RecordShadow of an unknown item", ss.RecordShadow(e.ctx, e.user, newID("inbox"), trial(item, "c", 1)), brainwire.ENotFound)
	checkCode(t, "RecordShadow of another user's item", ss.RecordShadow(e.ctx, newID("user"), item.ID, trial(item, "c", 1)), brainwire.ENotFound)
	e.checkReads(item)
}

func testShadowZeroTime(t *testing.T, e *env) {
	item := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	tr := trial(item, "c", 1)
	tr.At = time.Time{}
	checkCode(t, "RecordShadow without a time", e.shadows().RecordShadow(e.ctx, e.user, item.ID, tr), brainwire.EInvalid)
	e.checkReads(item)
}

// A person's recategorize after the trial keeps it (recategorize expects
// the item before it, trial included, as the contract says).
func testShadowRecategorizeKeepsIt(t *testing.T, e *env) {
	item := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	rec := e.record(brainwire.BucketPeople, item.FiledRecordID)
	item = e.recordShadow(item, trial(item, "cand-1", 1))
	got, _ := e.recategorize(item, &rec, brainwire.BucketAdmin, at(100))
	e.checkReads(got)
	if got.Shadow == nil || got.Shadow.Candidate.RunID != "shadow-run-1" {
		t.Fatalf("recategorized item's trial %+v, want the one recorded", got.Shadow)
	}
}

// A trial recorded after the person's recategorize keeps the person's
// bucket, and UpdatedAt stays the person's time.
func testShadowAfterRecategorize(t *testing.T, e *env) {
	item := e.file(e.filing(brainwire.StatusPending, brainwire.BucketIdeas))
	rec := e.record(brainwire.BucketIdeas, item.FiledRecordID)
	got, _ := e.recategorize(item, &rec, brainwire.BucketProjects, at(100))
	kept := e.recordShadow(got, trial(item, "cand-1", 1))
	if kept.ClassificationMeta.Bucket != brainwire.BucketProjects || !kept.UpdatedAt.Equal(at(100)) {
		t.Fatalf("expectation lost the person's filing: %+v", kept)
	}
	e.onlyRecord(brainwire.BucketProjects, got.FiledRecordID)
}

// A follow-up's refile keeps the trial of the item's capture.
func testShadowRefileKeepsIt(t *testing.T, e *env) {
	item := e.file(e.filing(brainwire.StatusMisunderstood, ""))
	item = e.recordShadow(item, trial(item, "cand-1", 1))
	f := e.refiling(item, brainwire.StatusClassified, brainwire.BucketProjects)
	got := e.file(f)
	check(t, "refiled item", got, refiled(item, f))
	e.checkReads(got)
}

// A trial recorded while the person recategorizes the item, or while a
// follow-up refiles it, loses neither write: both calls succeed, and the
// item has the trial and the person's (or the follow-up's) filing.
func testShadowConcurrently(t *testing.T, e *env) {
	ss := e.shadows()
	for i := range 5 {
		item := e.file(e.filing(brainwire.StatusPending, brainwire.BucketIdeas))
		tr := trial(item, "cand-1", i)
		f := e.refiling(item, brainwire.StatusClassified, brainwire.BucketAdmin)
		if i%2 == 0 {
			f = brainwire.Filing{} // a recategorize this round
		}
		var recordErr, writeErr error
		var wg sync.WaitGroup
		wg.Go(func() { recordErr = ss.RecordShadow(e.ctx, e.user, item.ID, tr) })
		wg.Go(func() {
			if f.InboxItemID != "" {
				_, writeErr = e.s.File(e.ctx, f)
				return
			}
			_, writeErr = e.s.Recategorize(e.ctx, e.user, item.ID, brainwire.BucketPeople, newID("rec"), "user:"+e.user, at(100))
		})
		wg.Wait()
		if recordErr != nil || writeErr != nil {
			t.Fatalf("round %d: RecordShadow: %v; the person's write: %v", i, recordErr, writeErr)
		}
		got := e.get(item.ID)
		wantBucket := brainwire.BucketPeople
		if f.InboxItemID != "" {
			wantBucket = brainwire.BucketAdmin
		}
		if got.ClassificationMeta == nil || got.ClassificationMeta.Bucket != wantBucket {
			t.Errorf("round %d: item filed as %+v, want %s", i, got.ClassificationMeta, wantBucket)
		}
		if got.Shadow == nil {
			t.Errorf("round %d: the trial was lost", i)
			continue
		}
		check(t, fmt.Sprintf("round %d: trial", i), *got.Shadow, tr)
	}
}
