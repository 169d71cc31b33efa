package cosmos

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

func claimAt(round int, token string, at time.Time) brainwire.FollowUpClaim {
	return brainwire.FollowUpClaim{Round: round, Token: token, At: at, Until: at.Add(time.Minute)}
}

// Two stores on one database are two replicas: claims racing across them
// are granted once.
func testClaimAcrossStores(t *testing.T, e *emulator) {
	a := e.open(t, storeOptions{})
	b := e.open(t, storeOptions{database: a.dbName, noEnsure: true})
	g := &ids{}
	for round := range 5 {
		m := mustFile(t, a, filing(g, "alice", "", brainwire.StatusMisunderstood, baseTime))
		const n = 10
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() {
				<-start
				_, errs[i] = s.ClaimFollowUp(context.Background(), "alice", m.ID, claimAt(1, fmt.Sprintf("run-%d", i), baseTime.Add(time.Second)))
			})
		}
		close(start)
		wg.Wait()
		granted := 0
		for i, err := range errs {
			switch brainwire.ErrorCode(err) {
			case "":
				granted++
			case brainwire.EConflict:
			default:
				t.Errorf("race %d, claim %d: %v", round, i, err)
			}
		}
		if granted != 1 {
			t.Fatalf("race %d: %d claims granted, want 1: %v", round, granted, errs)
		}
	}
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
