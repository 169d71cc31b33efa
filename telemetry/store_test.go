package telemetry_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/storetest"
)

// The traced store is a store: the whole conformance suite passes through
// it (on SQLite), so no method is lost or changed by the wrapper.
func TestWrappedStoreConforms(t *testing.T) {
	tel, _ := recorded(t, true)
	storetest.Run(t, func(t *testing.T) brainwire.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return tel.WrapStore(st)
	})
}

func TestWrapStoreTracesFollowUpClaims(t *testing.T) {
	tel, rec := recorded(t, true)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws := tel.WrapStore(st)
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	item, err := ws.File(ctx, brainwire.Filing{UserID: "alice", NewInboxID: "m1", RawText: "hmm", Source: brainwire.KindText,
		Status: brainwire.StatusMisunderstood, UpstreamThreadID: "thread_1", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	c := brainwire.FollowUpClaim{Round: 1, Token: "run-1", At: now, Until: now.Add(time.Minute)}
	if _, err := ws.ClaimFollowUp(ctx, "alice", item.ID, c); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.ClaimFollowUp(ctx, "alice", item.ID, c); brainwire.ErrorCode(err) != brainwire.EConflict {
		t.Fatalf("second claim: %v", err)
	}
	if err := ws.ReleaseFollowUp(ctx, "alice", item.ID, "run-1"); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	want := []string{"store.file", "store.claim_follow_up", "store.claim_follow_up", "store.release_follow_up"}
	if len(spans) != len(want) {
		t.Fatalf("%d spans, want %d", len(spans), len(want))
	}
	for i, s := range spans {
		if s.Name() != want[i] {
			t.Errorf("span %d = %s, want %s", i, s.Name(), want[i])
		}
	}
	if v, _ := spanAttr(spans[1], "brainwire.follow_up.round"); v.AsInt64() != 1 {
		t.Errorf("claim span round = %v", v)
	}
	if v, _ := spanAttr(spans[2], "error.type"); v.AsString() != brainwire.EConflict {
		t.Errorf("refused claim span error.type = %v", v)
	}
}
