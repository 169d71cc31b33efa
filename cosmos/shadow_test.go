package cosmos

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
)

// A shadow trial recorded between a person's (or a follow-up's) read of
// an item and their conditional replace is no conflict: their write
// succeeds and keeps the trial. A write between a trial's read and its
// replace is kept, and the trial put on the item it left.
func testShadowMeetsWrites(t *testing.T, e *emulator) {
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	other := e.open(t, storeOptions{database: s.dbName, noEnsure: true})
	g := &ids{}
	ctx := context.Background()
	tr := brainwire.ShadowTrial{Candidate: brainwire.AgentRun{RunID: "shadow-1", AgentVersion: "cand", Outcome: brainwire.OutcomeClassified,
		Bucket: brainwire.BucketAdmin, Confidence: 0.8}, CandidateReasoning: "an errand", At: baseTime.Add(time.Minute).UTC()}
	recordMeanwhile := func(id string) {
		f.add(&fault{method: http.MethodPut, path: "/colls/Inbox/docs/" + id, before: func(*http.Request) {
			if err := other.RecordShadow(ctx, "alice", id, tr); err != nil {
				t.Errorf("concurrent RecordShadow: %v", err)
			}
		}})
	}
	kept := func(what string, got brainwire.InboxItem, err error, bucket string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sameItem(t, got, mustGetItem(t, s, "alice", got.ID))
		if got.Shadow == nil || *got.Shadow != tr || got.ClassificationMeta.Bucket != bucket {
			t.Errorf("%s: item %+v with trial %+v, want the trial and %s", what, got, got.Shadow, bucket)
		}
	}

	p := mustFile(t, s, filing(g, "alice", brainwire.BucketIdeas, brainwire.StatusPending, baseTime))
	recordMeanwhile(p.ID)
	got, err := s.Recategorize(ctx, "alice", p.ID, brainwire.BucketPeople, "rec-x", "user", baseTime.Add(time.Hour))
	kept("Recategorize to another bucket", got, err, brainwire.BucketPeople)

	q := mustFile(t, s, filing(g, "alice", brainwire.BucketAdmin, brainwire.StatusPending, baseTime))
	recordMeanwhile(q.ID)
	got, err = s.Recategorize(ctx, "alice", q.ID, brainwire.BucketAdmin, "rec-y", "user", baseTime.Add(time.Hour))
	kept("Recategorize in place", got, err, brainwire.BucketAdmin)

	m := mustFile(t, s, filing(g, "alice", "", brainwire.StatusMisunderstood, baseTime))
	recordMeanwhile(m.ID)
	fu := filing(g, "alice", brainwire.BucketProjects, brainwire.StatusClassified, baseTime.Add(time.Hour))
	fu.InboxItemID = m.ID
	got, err = s.File(ctx, fu)
	kept("refile", got, err, brainwire.BucketProjects)

	r := mustFile(t, s, filing(g, "alice", brainwire.BucketIdeas, brainwire.StatusPending, baseTime))
	var changed brainwire.InboxItem
	f.add(&fault{method: http.MethodPut, path: "/colls/Inbox/docs/" + r.ID, before: func(*http.Request) {
		changed = touchItem(t, other, "alice", r.ID, "changed meanwhile")
	}})
	if err := s.RecordShadow(ctx, "alice", r.ID, tr); err != nil {
		t.Fatalf("RecordShadow while the item changed: %v", err)
	}
	changed.Shadow = &tr
	sameItem(t, mustGetItem(t, s, "alice", r.ID), changed)

	// The item's document holds the trial under "shadow", its time a
	// stamp as the document's others are.
	resp, err := s.inbox.ReadItem(ctx, azcosmos.NewPartitionKeyString("alice"), r.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, doc := jsonKeys(t, resp.Value)
	keys, trial := jsonKeys(t, doc["shadow"])
	if want := sorted("candidate", "production", "candidateReasoning", "at"); !slices.Equal(keys, want) {
		t.Errorf("shadow keys = %v, want %v", keys, want)
	}
	if at := string(trial["at"]); at != `"`+tr.At.Format(timeLayout)+`"` {
		t.Errorf("shadow time %s, want a stamp of %v", at, tr.At)
	}
}
