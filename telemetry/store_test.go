package telemetry_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

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

// TestWrapStoreSpans: every operation is a span named after it, with
// its attributes; a missing document is an answer (error.type, no error
// status), a refused claim a failure; the wrapper keeps the store's kind
// for /health.
func TestWrapStoreSpans(t *testing.T) {
	tel, rec := recorded(t, true)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws := tel.WrapStore(st)
	if k, ok := ws.(interface{ Kind() string }); !ok || k.Kind() != "sqlite" {
		t.Error("the wrapper hides the store's kind from /health")
	}
	ctx := context.Background()
	if _, err := ws.GetInboxItem(ctx, "alice", "missing"); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Fatalf("GetInboxItem: %v", err)
	}
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
	want := []struct {
		name, attr string
		value      any
		failed     bool
	}{
		{"store.get_inbox_item", "error.type", "not_found", false},
		{"store.file", "brainwire.inbox_item_id", item.ID, false},
		{"store.claim_follow_up", "brainwire.follow_up.round", int64(1), false},
		{"store.claim_follow_up", "error.type", brainwire.EConflict, true},
		{"store.release_follow_up", "db.system.name", "sqlite", false},
	}
	if len(spans) != len(want) {
		t.Fatalf("%d spans, want %d", len(spans), len(want))
	}
	for i, w := range want {
		s := spans[i]
		v, _ := spanAttr(s, w.attr)
		if s.Name() != w.name || v.AsInterface() != w.value || (s.Status().Code == codes.Error) != w.failed {
			t.Errorf("span %d: %s, %s = %v, status %v; want %s, %v, failed %v", i, s.Name(), w.attr, v.AsInterface(), s.Status(), w.name, w.value, w.failed)
		}
	}
}

// trialStore keeps shadow trials and nothing else.
type trialStore struct {
	brainwire.Store
	got []string
}

func (s *trialStore) RecordShadow(_ context.Context, userID, itemID string, t brainwire.ShadowTrial) error {
	s.got = append(s.got, userID+"/"+itemID+"/"+t.Candidate.RunID)
	return nil
}

// TestWrapStoreKeepsShadowTrials: the traced store passes a trial on to a
// store that keeps them, in a span, and says a store that keeps none
// cannot.
func TestWrapStoreKeepsShadowTrials(t *testing.T) {
	tel, rec := recorded(t, true)
	ts := &trialStore{}
	trial := brainwire.ShadowTrial{Candidate: brainwire.AgentRun{RunID: "shadow_1"}}
	if err := tel.WrapStore(ts).(brainwire.ShadowStore).RecordShadow(t.Context(), "alice", "i1", trial); err != nil || len(ts.got) != 1 || ts.got[0] != "alice/i1/shadow_1" {
		t.Fatalf("RecordShadow: %v, the store got %v", err, ts.got)
	}
	if s := rec.Ended(); len(s) != 1 || s[0].Name() != "store.record_shadow" {
		t.Errorf("spans %v, want store.record_shadow", s)
	}
	none := tel.WrapStore(struct{ brainwire.Store }{ts}).(brainwire.ShadowStore)
	if err := none.RecordShadow(t.Context(), "alice", "i1", trial); brainwire.ErrorCode(err) != brainwire.EUnavailable {
		t.Errorf("a store keeping no trials: %v", err)
	}
}
