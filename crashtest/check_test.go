package crashtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/cosmos"
	_ "modernc.org/sqlite"
)

// stored is what the store holds of the phone's user after a run, read
// from its tables or containers as they are, not through brainwire.
type stored struct {
	items []item
	// records counts the bucket records, by bucket and the item each
	// links to.
	records map[string]map[string]int
	keys    []keyDoc
}

// item is an inbox item as stored.
type item struct {
	ID                 string `json:"id"`
	RawText            string `json:"rawText"`
	Status             string `json:"status"`
	FiledRecordID      string `json:"filedRecordId"`
	ClassificationMeta struct {
		Bucket string `json:"bucket"`
	} `json:"classificationMeta"`
	// FiledUnder is the key the item was filed under, where the store
	// keeps it.
	FiledUnder *struct {
		Key    string `json:"key"`
		Replay struct {
			InboxItemID string `json:"inboxItemId"`
		} `json:"replay"`
	} `json:"filedUnder"`
}

// filedUnder reports whether the item records that key's capture filed it.
func (it item) filedUnder(key string) bool {
	return it.FiledUnder != nil && it.FiledUnder.Key == key && it.FiledUnder.Replay.InboxItemID == it.ID
}

// keyDoc is an Idempotency-Key as a store keeps it.
type keyDoc struct {
	Key    string    `json:"key"`
	State  string    `json:"state"`
	Until  time.Time `json:"until"`
	ItemID string    `json:"itemId"`
}

func (s *stored) count(bucket, item string) {
	if s.records[bucket] == nil {
		s.records[bucket] = map[string]int{}
	}
	s.records[bucket][item]++
}

// readSQLite reads the SQLite file the replicas share in dataDir.
func readSQLite(t *testing.T, dataDir string) stored {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "brainwire.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := stored{records: map[string]map[string]int{}}
	rows := func(query string, each func(scan func(...any))) {
		t.Helper()
		r, err := db.Query(query, phoneUser)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer r.Close()
		for r.Next() {
			each(func(dest ...any) {
				if err := r.Scan(dest...); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	// A file of a brainwire from before items recorded their key, or keys
	// their item (-crash.binary), lacks those columns.
	has := func(table, column string) bool {
		var n int
		_ = db.QueryRow(`SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, table, column).Scan(&n)
		return n == 1
	}
	under, itemID := "'null'", "''"
	if has("inbox", "filed_under") {
		under = "coalesce(filed_under, 'null')"
	}
	if has("idempotency_keys", "item_id") {
		itemID = "item_id"
	}
	rows(`SELECT id, raw_text, status, filed_record_id, coalesce(classification, '{}'), `+under+` FROM inbox WHERE user_id = ?`,
		func(scan func(...any)) {
			var it item
			var cls, under string
			scan(&it.ID, &it.RawText, &it.Status, &it.FiledRecordID, &cls, &under)
			_ = json.Unmarshal([]byte(cls), &it.ClassificationMeta)
			_ = json.Unmarshal([]byte(under), &it.FiledUnder)
			out.items = append(out.items, it)
		})
	rows(`SELECT bucket, inbox_record_id FROM bucket_records WHERE user_id = ?`, func(scan func(...any)) {
		var bucket, item string
		scan(&bucket, &item)
		out.count(bucket, item)
	})
	rows(`SELECT key, state, until, `+itemID+` FROM idempotency_keys WHERE user_id = ?`, func(scan func(...any)) {
		var k keyDoc
		var until int64
		scan(&k.Key, &k.State, &until, &k.ItemID)
		k.Until = time.Unix(0, until)
		out.keys = append(out.keys, k)
	})
	return out
}

// readCosmos reads the Cosmos DB database the replicas share.
func readCosmos(t *testing.T, endpoint, database string) stored {
	t.Helper()
	cred, _ := azcosmos.NewKeyCredential(cosmosKey)
	client, err := azcosmos.NewClientWithKey(endpoint, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	query := func(container string, each func(raw []byte)) {
		t.Helper()
		c, err := client.NewContainer(database, container)
		if err != nil {
			t.Fatal(err)
		}
		pager := c.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKeyString(phoneUser), nil)
		for pager.More() {
			page, err := pager.NextPage(context.Background())
			if err != nil {
				t.Fatalf("reading %s: %v", container, err)
			}
			for _, raw := range page.Items {
				each(raw)
			}
		}
	}
	out := stored{records: map[string]map[string]int{}}
	query(cosmos.InboxContainer, func(raw []byte) {
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Errorf("an inbox document: %v: %s", err, raw)
		}
		out.items = append(out.items, it)
	})
	for _, b := range brainwire.Buckets {
		query(b, func(raw []byte) {
			var r struct {
				InboxRecordID string `json:"inboxRecordId"`
			}
			_ = json.Unmarshal(raw, &r)
			out.count(b, r.InboxRecordID)
		})
	}
	query(cosmos.KeysContainer, func(raw []byte) {
		var k keyDoc
		if err := json.Unmarshal(raw, &k); err != nil {
			t.Errorf("a key document: %v: %s", err, raw)
		}
		out.keys = append(out.keys, k)
	})
	return out
}

// checks counts the invariants checked and reports those broken.
type checks struct {
	t      *testing.T
	n      int
	broken int
}

func (c *checks) check(ok bool, format string, args ...any) {
	c.t.Helper()
	c.n++
	if !ok {
		c.broken++
		if c.broken <= 40 {
			c.t.Errorf(format, args...)
		}
	}
}

// checkStore checks what the store holds against what the phones sent and
// heard: every key filed at most one item, which holds what its phone
// sent, with its bucket record when it has one and no record of anything
// else; no key left running.
func checkStore(c *checks, s stored, caps []*capture, now time.Time) {
	c.t.Helper()
	byText := map[string][]item{}
	for _, it := range s.items {
		byText[it.RawText] = append(byText[it.RawText], it)
	}
	byKey := map[string]keyDoc{}
	for _, k := range s.keys {
		byKey[k.Key] = k
	}
	known := map[string]bool{}
	for _, cp := range caps {
		known[cp.text] = true
		got := byText[cp.text]
		c.check(len(got) <= 1, "capture %d (key %s) filed %d items: %v", cp.n, cp.key, len(got), ids(got))
		if cp.heard == "" {
			continue
		}
		if cp.itemID == "" {
			c.check(len(got) == 0, "capture %d heard %s naming no item, but %v hold its text", cp.n, cp.kind, ids(got))
			continue
		}
		c.check(len(got) == 1 && got[0].ID == cp.itemID, "capture %d heard of item %s (%s), the store holds %v with its text", cp.n, cp.itemID, cp.heard, ids(got))
		k, ok := byKey[cp.key]
		switch {
		case !ok:
			c.check(false, "capture %d was filed, and its key %s is gone", cp.n, cp.key)
		case k.State == string(brainwire.KeyDone):
			c.check(true, "")
		default:
			// A replica that died between filing and settling (Cosmos DB)
			// leaves the key running; its item then says so, and a
			// repeat replays it.
			c.check(now.After(k.Until) && len(got) == 1 && got[0].filedUnder(cp.key),
				"capture %d was filed as %s, and its key is %s until %v with nothing on the item to replay", cp.n, cp.itemID, k.State, k.Until)
		}
	}
	for text, got := range byText {
		c.check(known[text], "items %v hold a text no phone sent: %q", ids(got), text)
	}
	linked := map[string]bool{}
	for _, it := range s.items {
		if it.FiledRecordID == "" {
			continue
		}
		linked[it.ID] = true
		b := it.ClassificationMeta.Bucket
		c.check(s.records[b][it.ID] == 1, "item %s (%s in %s) has %d bucket records", it.ID, it.Status, b, s.records[b][it.ID])
	}
	for b, byItem := range s.records {
		for item, n := range byItem {
			c.check(linked[item], "%d %s records link to item %s, which links to none", n, b, item)
		}
	}
	for _, k := range s.keys {
		c.check(k.State == string(brainwire.KeyDone) || !now.After(k.Until) || k.ItemID != "" && filedUnder(s.items, k),
			"key %s is %s past its lease (%v) with nothing filed under it", k.Key, k.State, k.Until)
	}
}

// filedUnder reports whether an item records k's capture.
func filedUnder(items []item, k keyDoc) bool {
	for _, it := range items {
		if it.ID == k.ItemID {
			return it.filedUnder(k.Key)
		}
	}
	return false
}

func ids(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID + " " + it.Status
	}
	return out
}

// checkReplays repeats every capture that heard an outcome with its key
// and checks that the replay is what its phone heard.
func checkReplays(ctx context.Context, c *checks, client *http.Client, r *replica, caps []*capture) {
	c.t.Helper()
	for _, cp := range caps {
		if cp.heard == "" {
			continue
		}
		a := send(ctx, client, r.base(), cp, 30*time.Second)
		c.check(a.replayed && a.outcome == cp.heard,
			"capture %d's repeat: %s (replayed %v, %s); its phone heard %s from %s", cp.n, a.outcome, a.replayed, a.reason(), cp.heard, cp.from)
	}
}

// checkAudio checks that the audio directory holds only what a killed
// replica left, and that the sweep removes it once it is old enough: it
// ages what is left past the sweep age and starts r, which sweeps at
// start.
func checkAudio(c *checks, dataDir string, r *replica, age time.Duration) (left int) {
	c.t.Helper()
	dir := filepath.Join(dataDir, "audio")
	entries, _ := os.ReadDir(dir)
	old := time.Now().Add(-age - time.Minute)
	for _, e := range entries {
		_ = os.Chtimes(filepath.Join(dir, e.Name()), old, old)
	}
	r.kill()
	if err := r.start(); err != nil {
		c.t.Fatal(err)
	}
	after, _ := os.ReadDir(dir)
	var names []string
	for _, e := range after {
		names = append(names, e.Name())
	}
	c.check(len(after) == 0, "audio left past the sweep age: %v", names)
	return len(entries)
}

// summary is one line of a run's figures.
func summary(caps []*capture, extra string) string {
	attempts, replays, voice := 0, 0, 0
	failures := map[string]int{}
	kinds := map[string]int{}
	for _, c := range caps {
		attempts += c.attempts
		if c.replayed {
			replays++
		}
		if c.audio != nil {
			voice++
		}
		kinds[c.kind]++
		for k, n := range c.failures {
			failures[k] += n
		}
	}
	return fmt.Sprintf("%d captures (%d voice) in %d attempts, %d heard as replays; outcomes %v; failed attempts %v; %s",
		len(caps), voice, attempts, replays, kinds, failures, extra)
}
