package cosmos

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/storetest"
)

func claimAt(round int, token string, at time.Time) brainwire.FollowUpClaim {
	return brainwire.FollowUpClaim{Round: round, Token: token, At: at, Until: at.Add(time.Minute)}
}

// Two stores on one database are two replicas.
func testReplicas(t *testing.T, e *emulator) {
	storetest.RunReplicas(t, func(t *testing.T) (a, b brainwire.Store) {
		s := e.open(t, storeOptions{})
		return s, e.open(t, storeOptions{database: s.dbName, noEnsure: true})
	})
}

// A claim that loses its conditional replace to a change that did not
// claim the item (412) reads again and claims it.
func testClaimRetriesAfterAConcurrentChange(t *testing.T, e *emulator) {
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	other := e.open(t, storeOptions{database: s.dbName, noEnsure: true})
	g := &ids{}
	m := mustFile(t, s, filing(g, "alice", "", brainwire.StatusMisunderstood, baseTime))
	f.add(&fault{method: http.MethodPut, path: "/colls/Inbox/docs/" + m.ID, before: func(*http.Request) {
		touchItem(t, other, "alice", m.ID, "changed meanwhile")
	}})
	c := claimAt(1, "run-1", baseTime.Add(time.Second))
	got, err := s.ClaimFollowUp(context.Background(), "alice", m.ID, c)
	if err != nil {
		t.Fatalf("ClaimFollowUp after a concurrent change: %v", err)
	}
	if got.Title != "changed meanwhile" || got.FollowUpClaim == nil || got.FollowUpClaim.Token != "run-1" {
		t.Errorf("claimed item %+v", got)
	}
	puts := 0
	for _, r := range f.requests() {
		if strings.HasPrefix(r, "PUT ") && strings.HasSuffix(r, "/docs/"+m.ID) {
			puts++
		}
	}
	if puts != 2 {
		t.Errorf("%d replaces of the item, want 2 (the lost one and the retry)", puts)
	}
}

// An item that changes under every attempt is a conflict, not a loop.
func testClaimGivesUpAfterRepeatedChanges(t *testing.T, e *emulator) {
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	other := e.open(t, storeOptions{database: s.dbName, noEnsure: true})
	g := &ids{}
	m := mustFile(t, s, filing(g, "alice", "", brainwire.StatusMisunderstood, baseTime))
	f.add(&fault{method: http.MethodPut, path: "/colls/Inbox/docs/" + m.ID, n: maxClaimAttempts, before: func(*http.Request) {
		touchItem(t, other, "alice", m.ID, "changed again")
	}})
	_, err := s.ClaimFollowUp(context.Background(), "alice", m.ID, claimAt(1, "run-1", baseTime.Add(time.Second)))
	wantCode(t, err, brainwire.EConflict)
	if it := mustGetItem(t, s, "alice", m.ID); it.FollowUpClaim != nil {
		t.Errorf("item claimed after giving up: %+v", it.FollowUpClaim)
	}
}
