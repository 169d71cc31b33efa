package cosmos

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
)

// ids hands out document ids unique within a test.
type ids struct {
	mu sync.Mutex
	n  int
}

func (g *ids) next(prefix string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	return prefix + "-" + strconv.Itoa(g.n)
}

// baseTime is a fixed, non-UTC time with nanoseconds, so that stored and
// returned times are checked for zone and precision handling.
var baseTime = time.Date(2025, 3, 14, 9, 26, 53, 589793238, time.FixedZone("CET", 3600))

// filing returns a filing of a new capture.
func filing(g *ids, user, bucket, status string, now time.Time) brainwire.Filing {
	f := brainwire.Filing{
		UserID:      user,
		NewInboxID:  g.next("inbox"),
		NewRecordID: g.next("rec"),
		RawText:     "call Anna about the roof",
		Title:       "Anna",
		Source:      brainwire.KindText,
		Status:      status,
		Classification: brainwire.Classification{
			Bucket:       bucket,
			Confidence:   0.91,
			AllScores:    map[string]float64{"People": 0.91, "Projects": 0.05, "Ideas": 0.03, "Admin": 0.01},
			ClassifiedBy: "Classifier",
			AgentChain:   []string{"Orchestrator", "Classifier"},
			ClassifiedAt: now,
		},
		UpstreamThreadID: "thread_abc",
		Now:              now,
	}
	if status == brainwire.StatusPending {
		f.Classification.Confidence = 0.42
	}
	if status == brainwire.StatusMisunderstood {
		f.Classification = brainwire.Classification{}
	}
	return f
}

func mustFile(t *testing.T, s *Store, f brainwire.Filing) brainwire.InboxItem {
	t.Helper()
	it, err := s.File(context.Background(), f)
	if err != nil {
		t.Fatalf("File(%s): %v", f.NewInboxID, err)
	}
	return it
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := brainwire.ErrorCode(err); got != code {
		t.Fatalf("error code = %q, want %q (err: %v)", got, code, err)
	}
}

func mustGetItem(t *testing.T, s *Store, user, id string) brainwire.InboxItem {
	t.Helper()
	it, err := s.GetInboxItem(context.Background(), user, id)
	if err != nil {
		t.Fatalf("GetInboxItem(%s): %v", id, err)
	}
	return it
}

// recordExists reports whether the bucket record exists.
func recordExists(t *testing.T, s *Store, user, bucket, id string) bool {
	t.Helper()
	_, err := s.GetBucketRecord(context.Background(), user, bucket, id)
	switch brainwire.ErrorCode(err) {
	case "":
		return true
	case brainwire.ENotFound:
		return false
	}
	t.Fatalf("GetBucketRecord(%s, %s): %v", bucket, id, err)
	return false
}

func mustRecord(t *testing.T, s *Store, user, bucket, id string) brainwire.BucketRecord {
	t.Helper()
	r, err := s.GetBucketRecord(context.Background(), user, bucket, id)
	if err != nil {
		t.Fatalf("GetBucketRecord(%s, %s): %v", bucket, id, err)
	}
	return r
}

// countDocs counts a user's documents in a container, bypassing the store.
func countDocs(t *testing.T, c *azcosmos.ContainerClient, user string) int {
	t.Helper()
	pager := c.NewQueryItemsPager("SELECT * FROM c WHERE c.userId = @u", azcosmos.NewPartitionKeyString(user),
		&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@u", Value: user}}})
	n := 0
	for pager.More() {
		resp, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatalf("querying %s: %v", c.ID(), err)
		}
		n += len(resp.Items)
	}
	return n
}

// countAll counts a user's documents in every container.
func countAll(t *testing.T, s *Store, user string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, name := range containerNames() {
		c := s.inbox
		if name != InboxContainer {
			c = s.buckets[name]
		}
		if n := countDocs(t, c, user); n > 0 {
			out[name] = n
		}
	}
	return out
}

// touchItem changes an Inbox item behind the store's back, as a concurrent
// request would, and returns it as changed.
func touchItem(t *testing.T, s *Store, user, id, title string) brainwire.InboxItem {
	t.Helper()
	ctx := context.Background()
	d, etag, err := s.readItem(ctx, user, id)
	if err != nil {
		t.Errorf("concurrent read of %s: %v", id, err)
		return brainwire.InboxItem{}
	}
	it := d.item()
	it.Title = title
	if err := s.replaceItem(ctx, it, etag); err != nil {
		t.Errorf("concurrent replace of %s: %v", id, err)
	}
	return normalizeItem(it)
}

func sameItem(t *testing.T, got, want brainwire.InboxItem) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("item =\n%s\nwant\n%s", g, w)
	}
}

// fakeCredential is a token credential that records what it was asked.
type fakeCredential struct {
	mu     sync.Mutex
	scopes [][]string
}

func (c *fakeCredential) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scopes = append(c.scopes, o.Scopes)
	return azcore.AccessToken{Token: "fake-token", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func (c *fakeCredential) calls() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]string(nil), c.scopes...)
}
