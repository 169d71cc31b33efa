package cosmos

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
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
	if d["key"] != key || d["userId"] != "alice" || d["state"] != "running" || d["ttl"] != 150.0 {
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
