package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/tools"
)

// A key is one document in the user's partition, named by the key's hash
// (keys may hold what ids may not), and the service deletes it a little
// after it lapses.
func testKeyDocuments(t *testing.T, e *emulator) {
	ctx := context.Background()
	s := e.open(t, storeOptions{})
	const key = `"a/b?c#d\e"`
	k := brainwire.IdempotencyKey{UserID: "alice", Key: key, Fingerprint: "fp", Token: "t1", State: brainwire.KeyRunning,
		At: baseTime, Until: baseTime.Add(90 * time.Second)}
	if _, ok, err := s.ClaimKey(ctx, k); err != nil || !ok {
		t.Fatalf("ClaimKey: %v, %v", ok, err)
	}
	raw := func() map[string]any {
		t.Helper()
		resp, err := s.keys.ReadItem(ctx, azcosmos.NewPartitionKeyString("alice"), keyID(key), nil)
		if err != nil {
			t.Fatalf("reading the key's document: %v", err)
		}
		var d map[string]any
		_ = json.Unmarshal(resp.Value, &d)
		return d
	}
	d := raw()
	if d["key"] != key || d["userId"] != "alice" || d["state"] != "running" || d["ttl"] != 90.0+86400 {
		t.Errorf("running key document: %v", d)
	}
	k.State, k.At, k.Until = brainwire.KeyDone, baseTime.Add(time.Second), baseTime.Add(time.Second+brainwire.KeyLifetime)
	k.Replay = &brainwire.Replay{Kind: brainwire.KindText, ThreadID: "th", RunID: "r", Outcome: brainwire.OutcomeClassified,
		InboxItemID: "item", Bucket: "People", Confidence: 0.9}
	if err := s.FinishKey(ctx, k); err != nil {
		t.Fatalf("FinishKey: %v", err)
	}
	if d := raw(); d["state"] != "done" || d["ttl"] != brainwire.KeyLifetime.Seconds()+60 {
		t.Errorf("finished key document: %v", d)
	}
}

// Two runs of one request race around a takeover: the first checked its
// claim, then stalled just before writing its item, long enough for its
// claim to lapse and a repeat, on another replica, to take the key over
// and file. The first, woken, finds the item id taken (the claims of one
// request share it) and tells its phone what the repeat filed: one item,
// one outcome.
func testFilingRacesATakeover(t *testing.T, e *emulator) {
	ctx := context.Background()
	f := newFaults()
	a := e.open(t, storeOptions{faults: f})
	b := e.open(t, storeOptions{database: a.dbName, noEnsure: true})
	var n int
	deps := func(s brainwire.Store) tools.Deps {
		return tools.Deps{Store: s, AgentName: "Classifier", Now: func() time.Time { return baseTime },
			NewID: func() string { n++; return fmt.Sprintf("id-%d", n) }}
	}
	c := brainwire.Capture{Kind: brainwire.KindText, UserID: "alice", ThreadID: "thread-1", RunID: "run-1", Text: "Plan the garden"}
	claim := brainwire.IdempotencyKey{UserID: "alice", Key: "k1", Fingerprint: "fp", Token: "first", State: brainwire.KeyRunning,
		At: baseTime, Until: baseTime.Add(time.Minute), ItemID: "item-of-k1"}
	if _, ok, err := a.ClaimKey(ctx, claim); err != nil || !ok {
		t.Fatalf("ClaimKey: %v, %v", ok, err)
	}
	call := func(bucket string) brainwire.ToolCall {
		return brainwire.ToolCall{ID: "call_1", Name: brainwire.ToolFileCapture, ThreadID: "thread_up",
			Arguments: json.RawMessage(`{"text":"Plan the garden","bucket":"` + bucket + `","confidence":0.9,"status":"classified"}`)}
	}

	var second brainwire.ToolResult
	f.add(&fault{method: http.MethodPost, path: "/colls/Inbox/docs", before: func(*http.Request) {
		took := claim
		took.Token, took.At, took.Until = "second", claim.Until, claim.Until.Add(time.Minute)
		got, ok, err := b.ClaimKey(ctx, took)
		if err != nil || !ok || !got.TookOver || got.ItemID != claim.ItemID {
			t.Errorf("the repeat's claim: %+v, %v, %v; want the lapsed claim's item, taken over", got, ok, err)
			return
		}
		set := tools.New(deps(b), c)
		set.FileUnder(got)
		second = set.Call(ctx, call(brainwire.BucketIdeas))
	}})
	set := tools.New(deps(a), c)
	set.FileUnder(claim)
	first := set.Call(ctx, call(brainwire.BucketProjects))

	if second.IsError || second.Filed == nil || second.Filed.ItemID != claim.ItemID || second.Filed.Bucket != brainwire.BucketIdeas {
		t.Fatalf("the repeat's filing: %+v", second)
	}
	if first.IsError || first.Filed == nil || *first.Filed != *second.Filed {
		t.Errorf("the first run's filing: %+v (%s), want the repeat's %+v", first.Filed, first.Output, second.Filed)
	}
	if n := countAll(t, a, "alice"); n["Inbox"] != 1 || n[brainwire.BucketIdeas] != 1 || len(n) != 2 {
		t.Errorf("documents = %v, want the repeat's item and its Ideas record", n)
	}
	k, _, err := a.readKey(ctx, "alice", "k1")
	if err != nil || k.State != brainwire.KeyDone || k.Replay == nil || k.Replay.InboxItemID != claim.ItemID || k.Replay.Bucket != brainwire.BucketIdeas {
		t.Errorf("the key: %+v, %v; want done, replaying the repeat's filing", k, err)
	}
}

// A keyed filing whose item write reached the service but whose answer was
// lost keeps its bucket record: the item is there, filed under the key, and
// the run tells what it filed. Without a key, nothing says the item is the
// filing's, and the record goes as before.
func testKeyedItemWriteLosesItsAnswer(t *testing.T, e *emulator) {
	ctx := context.Background()
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	claim := brainwire.IdempotencyKey{UserID: "alice", Key: "k1", Fingerprint: "fp", Token: "t1", State: brainwire.KeyRunning,
		At: baseTime, Until: baseTime.Add(time.Minute), ItemID: brainwire.ItemIDOf("alice", "k1", "fp")}
	if _, ok, err := s.ClaimKey(ctx, claim); err != nil || !ok {
		t.Fatalf("ClaimKey: %v, %v", ok, err)
	}
	f.add(&fault{method: http.MethodPost, path: "/colls/Inbox/docs", lose: errors.New("connection reset by peer")})
	set := tools.New(tools.Deps{Store: s, AgentName: "Classifier", Now: func() time.Time { return baseTime },
		NewID: func() string { return "unused" }}, brainwire.Capture{Kind: brainwire.KindText, UserID: "alice", RunID: "run-1", Text: "Plan the garden"})
	set.FileUnder(claim)
	res := set.Call(ctx, brainwire.ToolCall{ID: "call_1", Name: brainwire.ToolFileCapture, ThreadID: "thread_up",
		Arguments: json.RawMessage(`{"text":"Plan the garden","bucket":"Projects","confidence":0.9,"status":"classified"}`)})
	if res.IsError || res.Filed == nil || res.Filed.ItemID != claim.ItemID || res.Filed.Bucket != brainwire.BucketProjects {
		t.Fatalf("the filing: %+v (%s), want item %s told as filed", res.Filed, res.Output, claim.ItemID)
	}
	item := mustGetItem(t, s, "alice", claim.ItemID)
	if !recordExists(t, s, "alice", brainwire.BucketProjects, item.FiledRecordID) {
		t.Errorf("the item's record %s is gone", item.FiledRecordID)
	}
	if n := countAll(t, s, "alice"); n["Inbox"] != 1 || n[brainwire.BucketProjects] != 1 {
		t.Errorf("documents = %v, want the item and its record", n)
	}
}
