package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire/internal/syncbuf"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/brainwire/brainwire"
)

var errInjected = errors.New("injected network failure")

func testEnsureContainers(t *testing.T, e *emulator) {
	ctx := context.Background()
	s := e.open(t, storeOptions{})
	if err := s.EnsureContainers(ctx); err != nil {
		t.Fatalf("second EnsureContainers: %v", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	for _, name := range append(containerNames(), KeysContainer) {
		c, err := s.db.NewContainer(name)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Read(ctx, nil)
		if err != nil {
			t.Fatalf("reading container %s: %v", name, err)
		}
		if got := resp.ContainerProperties.PartitionKeyDefinition.Paths; !slices.Equal(got, []string{"/userId"}) {
			t.Errorf("%s partition key = %v, want [/userId]", name, got)
		}
		if ttl := resp.ContainerProperties.DefaultTimeToLive; name == KeysContainer && (ttl == nil || *ttl != -1) {
			t.Errorf("%s default TTL = %v, want -1 (on, documents expire by their own ttl)", name, ttl)
		}
		if name == InboxContainer {
			ip := resp.ContainerProperties.IndexingPolicy
			if ip == nil || !hasCompositeIndex(ip.CompositeIndexes, inboxIndexes()[0]) {
				t.Errorf("Inbox indexing policy %+v lacks the composite index", ip)
			}
		}
	}
}

func testPing(t *testing.T, e *emulator) {
	ctx := context.Background()
	s := e.open(t, storeOptions{noEnsure: true})
	err := s.Ping(ctx)
	wantCode(t, err, brainwire.EUnavailable)
	if !strings.Contains(brainwire.ErrorMessage(err), "database") {
		t.Errorf("message %q does not name the database", brainwire.ErrorMessage(err))
	}

	t.Cleanup(func() { _, _ = s.db.Delete(context.Background(), nil) })
	if _, err := s.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: s.dbName}, nil); err != nil {
		t.Fatal(err)
	}
	err = s.Ping(ctx)
	wantCode(t, err, brainwire.EUnavailable)
	if !strings.Contains(brainwire.ErrorMessage(err), "container Inbox") {
		t.Errorf("message %q does not name the Inbox container", brainwire.ErrorMessage(err))
	}

	// Nothing listens on port 1.
	down, err := Open(ctx, Config{
		Endpoint:      "http://127.0.0.1:1",
		Key:           emulatorKey,
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	wantCode(t, down.Ping(tctx), brainwire.EUnavailable)
}

func testTokenCredential(t *testing.T, e *emulator) {
	cred := &fakeCredential{}
	f := newFaults()
	s := e.open(t, storeOptions{cred: cred, faults: f})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	mustFile(t, s, filing(&ids{}, "alice", brainwire.BucketIdeas, brainwire.StatusClassified, baseTime))
	calls := cred.calls()
	if len(calls) == 0 {
		t.Fatal("the token credential was never asked for a token")
	}
	for _, scopes := range calls {
		if !slices.Equal(scopes, []string{"http://127.0.0.1/.default"}) {
			t.Errorf("token scopes = %v, want the account's .default scope", scopes)
		}
	}
	for i, a := range f.authorizations() {
		if a != "type=aad&ver=1.0&sig=fake-token" {
			t.Errorf("request %d (%s): Authorization = %q", i, f.requests()[i], a)
		}
	}
}

func testKeyWinsOverCredential(t *testing.T, e *emulator) {
	cred := &fakeCredential{}
	f := newFaults()
	s := e.open(t, storeOptions{cred: cred, key: emulatorKey, faults: f})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if n := len(cred.calls()); n != 0 {
		t.Errorf("token credential called %d times although a key is set", n)
	}
	for i, a := range f.authorizations() {
		if !strings.Contains(a, "type%3Dmaster") && !strings.Contains(a, "type=master") {
			t.Errorf("request %d: Authorization = %q, want a master key signature", i, a)
		}
	}
}

// jsonKeys returns the keys of a JSON object, without the service's own
// system properties (_rid, _etag, ...).
func jsonKeys(t *testing.T, raw []byte) ([]string, map[string]json.RawMessage) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	var keys []string
	for k := range m {
		if !strings.HasPrefix(k, "_") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, m
}

func sorted(s ...string) []string { sort.Strings(s); return s }

// The stored documents are the ones DESIGN §6 gives, which the backend
// brainwire replaced wrote too, with times in a fixed-width UTC form that
// sorts as strings.
func testStoredDocuments(t *testing.T, e *emulator) {
	ctx := context.Background()
	s := e.open(t, storeOptions{})
	f := filing(&ids{}, "alice", brainwire.BucketPeople, brainwire.StatusClassified, baseTime)
	mustFile(t, s, f)
	pk := azcosmos.NewPartitionKeyString("alice")
	stampRE := regexp.MustCompile(`^"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"$`)
	for _, c := range []struct {
		container *azcosmos.ContainerClient
		id        string
		keys      []string
		stamps    []string
	}{
		// DESIGN §6, literally, plus the follow-up round count.
		{s.inbox, f.NewInboxID, sorted("id", "userId", "rawText", "title", "source", "status", "classificationMeta",
			"filedRecordId", "foundryThreadId", "followUpRounds", "createdAt", "updatedAt"), []string{"createdAt", "updatedAt"}},
		{s.buckets[brainwire.BucketPeople], f.NewRecordID, sorted("id", "userId", "rawText", "title", "classificationMeta",
			"inboxRecordId", "createdAt"), []string{"createdAt"}},
	} {
		resp, err := c.container.ReadItem(ctx, pk, c.id, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys, doc := jsonKeys(t, resp.Value)
		if !slices.Equal(keys, c.keys) {
			t.Errorf("%s document keys = %v, want %v", c.container.ID(), keys, c.keys)
		}
		metaKeys, meta := jsonKeys(t, doc["classificationMeta"])
		if want := sorted("bucket", "confidence", "allScores", "classifiedBy", "agentChain", "classifiedAt"); !slices.Equal(metaKeys, want) {
			t.Errorf("%s classificationMeta keys = %v, want %v", c.container.ID(), metaKeys, want)
		}
		for _, v := range append([][]byte{meta["classifiedAt"]}, fieldsOf(doc, c.stamps)...) {
			if !stampRE.Match(v) {
				t.Errorf("%s time %s, want fixed-width UTC RFC 3339", c.container.ID(), v)
			}
		}
	}
	if n := countAll(t, s, "alice"); !reflect.DeepEqual(n, map[string]int{"Inbox": 1, "People": 1}) {
		t.Errorf("documents = %v, want one Inbox and one People", n)
	}
}

func fieldsOf(doc map[string]json.RawMessage, keys []string) [][]byte {
	var out [][]byte
	for _, k := range keys {
		out = append(out, doc[k])
	}
	return out
}

// A filing whose record id is taken stops at the record: the Inbox is not
// written (storetest checks that nothing of the filing is left).
func testRecordIDCollision(t *testing.T, e *emulator) {
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	g := &ids{}
	first := mustFile(t, s, filing(g, "alice", brainwire.BucketPeople, brainwire.StatusClassified, baseTime))
	second := filing(g, "alice", brainwire.BucketPeople, brainwire.StatusClassified, baseTime.Add(time.Minute))
	second.NewRecordID = first.FiledRecordID
	before := len(f.requests())
	_, err := s.File(context.Background(), second)
	wantCode(t, err, brainwire.EConflict)
	if reqs := f.requests()[before:]; len(reqs) != 1 || !strings.HasSuffix(reqs[0], "/colls/People/docs") {
		t.Errorf("requests = %v, want the People create only", reqs)
	}
}

func testInboxWriteFailsAfterRecord(t *testing.T, e *emulator) {
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	g := &ids{}
	existing := mustFile(t, s, filing(g, "alice", "", brainwire.StatusMisunderstood, baseTime))

	// The bucket record is written, then the Inbox create collides.
	clash := filing(g, "alice", brainwire.BucketIdeas, brainwire.StatusPending, baseTime.Add(time.Minute))
	clash.NewInboxID = existing.ID
	before := len(f.requests())
	_, err := s.File(context.Background(), clash)
	wantCode(t, err, brainwire.EConflict)
	reqs := f.requests()[before:]

	if recordExists(t, s, "alice", brainwire.BucketIdeas, clash.NewRecordID) {
		t.Error("the bucket record of the failed filing was not deleted")
	}
	sameItem(t, mustGetItem(t, s, "alice", existing.ID), existing)
	wantSeq := []string{"POST /colls/Ideas/docs", "POST /colls/Inbox/docs", "DELETE /colls/Ideas/docs/" + clash.NewRecordID}
	if len(reqs) != len(wantSeq) {
		t.Fatalf("requests = %v, want %v", reqs, wantSeq)
	}
	for i, w := range wantSeq {
		method, path, _ := strings.Cut(w, " ")
		if !strings.HasPrefix(reqs[i], method+" ") || !strings.HasSuffix(reqs[i], path) {
			t.Errorf("request %d = %s, want %s", i, reqs[i], w)
		}
	}
	if n := countAll(t, s, "alice"); !reflect.DeepEqual(n, map[string]int{"Inbox": 1}) {
		t.Errorf("documents = %v, want the existing Inbox item only", n)
	}
}

func testInboxWriteFailsCleanupFails(t *testing.T, e *emulator) {
	f := newFaults()
	logs := &syncbuf.Buffer{}
	s := e.open(t, storeOptions{faults: f, logger: textLogger(logs)})
	fl := filing(&ids{}, "alice", brainwire.BucketAdmin, brainwire.StatusClassified, baseTime)
	f.add(&fault{method: http.MethodPost, path: "/colls/Inbox/docs", err: errInjected})
	f.add(&fault{method: http.MethodDelete, path: "/colls/Admin/docs/" + fl.NewRecordID, err: errInjected})

	_, err := s.File(context.Background(), fl)
	wantCode(t, err, brainwire.EUnavailable)
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "deleting Admin record "+fl.NewRecordID) {
		t.Errorf("error %q does not report both failures", err)
	}
	// The one state compensation cannot fix is reported for an operator.
	if l := logs.String(); !strings.Contains(l, "orphaned") || !strings.Contains(l, fl.NewRecordID) {
		t.Errorf("log = %q, want the orphaned record reported", l)
	}
	_, err = s.GetInboxItem(context.Background(), "alice", fl.NewInboxID)
	wantCode(t, err, brainwire.ENotFound)
}

func testCancelledDuringInboxWrite(t *testing.T, e *emulator) {
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	fl := filing(&ids{}, "alice", brainwire.BucketProjects, brainwire.StatusClassified, baseTime)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The client goes away while the Inbox item is being written.
	f.add(&fault{method: http.MethodPost, path: "/colls/Inbox/docs", before: func(*http.Request) { cancel() }, err: context.Canceled})

	_, err := s.File(ctx, fl)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("File = %v, want context.Canceled", err)
	}
	if recordExists(t, s, "alice", brainwire.BucketProjects, fl.NewRecordID) {
		t.Error("the bucket record was left behind when the request was cancelled")
	}
}

func testRefileConcurrentChange(t *testing.T, e *emulator) {
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	other := e.open(t, storeOptions{database: s.dbName, noEnsure: true})
	g := &ids{}
	m := mustFile(t, s, filing(g, "alice", "", brainwire.StatusMisunderstood, baseTime))

	var changed brainwire.InboxItem
	f.add(&fault{method: http.MethodPut, path: "/colls/Inbox/docs/" + m.ID, before: func(*http.Request) {
		changed = touchItem(t, other, "alice", m.ID, "changed meanwhile")
	}})
	fu := filing(g, "alice", brainwire.BucketPeople, brainwire.StatusClassified, baseTime.Add(time.Hour))
	fu.InboxItemID = m.ID
	_, err := s.File(context.Background(), fu)
	wantCode(t, err, brainwire.EConflict)

	sameItem(t, mustGetItem(t, s, "alice", m.ID), changed)
	if recordExists(t, s, "alice", brainwire.BucketPeople, fu.NewRecordID) {
		t.Error("the new record was not deleted after the conflict")
	}
}

func testRefileOldRecordDeleteFails(t *testing.T, e *emulator) {
	f := newFaults()
	logs := &syncbuf.Buffer{}
	s := e.open(t, storeOptions{faults: f, logger: textLogger(logs)})
	g := &ids{}
	first := mustFile(t, s, filing(g, "alice", brainwire.BucketPeople, brainwire.StatusPending, baseTime))
	f.add(&fault{method: http.MethodDelete, path: "/colls/People/docs/" + first.FiledRecordID, err: errInjected})

	fu := filing(g, "alice", brainwire.BucketAdmin, brainwire.StatusClassified, baseTime.Add(time.Hour))
	fu.InboxItemID = first.ID
	it, err := s.File(context.Background(), fu)
	if err != nil {
		t.Fatalf("refile = %v; the item is consistent, so it must succeed", err)
	}
	if it.FiledRecordID != fu.NewRecordID || !recordExists(t, s, "alice", brainwire.BucketAdmin, fu.NewRecordID) {
		t.Errorf("item = %+v", it)
	}
	if l := logs.String(); !strings.Contains(l, "orphaned") || !strings.Contains(l, first.FiledRecordID) {
		t.Errorf("log = %q, want the stray record reported", l)
	}
}

func testRecategorizeConcurrentChange(t *testing.T, e *emulator) {
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	other := e.open(t, storeOptions{database: s.dbName, noEnsure: true})
	g := &ids{}
	p := mustFile(t, s, filing(g, "alice", brainwire.BucketIdeas, brainwire.StatusPending, baseTime))
	q := mustFile(t, s, filing(g, "alice", brainwire.BucketAdmin, brainwire.StatusPending, baseTime))
	var changed brainwire.InboxItem
	touch := func(id string) func(*http.Request) {
		return func(*http.Request) { changed = touchItem(t, other, "alice", id, "changed meanwhile") }
	}

	f.add(&fault{method: http.MethodPut, path: "/colls/Inbox/docs/" + p.ID, before: touch(p.ID)})
	_, err := s.Recategorize(context.Background(), "alice", p.ID, brainwire.BucketPeople, "rec-x", "user", baseTime.Add(time.Hour))
	wantCode(t, err, brainwire.EConflict)
	sameItem(t, mustGetItem(t, s, "alice", p.ID), changed)
	if recordExists(t, s, "alice", brainwire.BucketPeople, p.FiledRecordID) {
		t.Error("the record created in People was not deleted")
	}
	if !recordExists(t, s, "alice", brainwire.BucketIdeas, p.FiledRecordID) {
		t.Error("the original record is gone")
	}

	// Same bucket: the record's classification is restored.
	orig := mustRecord(t, s, "alice", brainwire.BucketAdmin, q.FiledRecordID)
	f.add(&fault{method: http.MethodPut, path: "/colls/Inbox/docs/" + q.ID, before: touch(q.ID)})
	_, err = s.Recategorize(context.Background(), "alice", q.ID, brainwire.BucketAdmin, "rec-y", "user", baseTime.Add(time.Hour))
	wantCode(t, err, brainwire.EConflict)
	if r := mustRecord(t, s, "alice", brainwire.BucketAdmin, q.FiledRecordID); !reflect.DeepEqual(r, orig) {
		t.Errorf("record = %+v, want it restored to %+v", r, orig)
	}

	// Same bucket, while another request moves the record away: a
	// conflict to try again, not "not found".
	r := mustFile(t, s, filing(g, "alice", brainwire.BucketPeople, brainwire.StatusPending, baseTime))
	f.add(&fault{method: http.MethodPut, path: "/colls/People/docs/" + r.FiledRecordID, before: func(*http.Request) {
		if _, err := other.Recategorize(context.Background(), "alice", r.ID, brainwire.BucketProjects, "rec-z", "user", baseTime.Add(time.Minute)); err != nil {
			t.Errorf("concurrent Recategorize: %v", err)
		}
	}})
	_, err = s.Recategorize(context.Background(), "alice", r.ID, brainwire.BucketPeople, "rec-w", "user", baseTime.Add(time.Hour))
	wantCode(t, err, brainwire.EConflict)
	if it := mustGetItem(t, s, "alice", r.ID); it.ClassificationMeta.Bucket != brainwire.BucketProjects ||
		!recordExists(t, s, "alice", brainwire.BucketProjects, it.FiledRecordID) || recordExists(t, s, "alice", brainwire.BucketPeople, r.FiledRecordID) {
		t.Errorf("after the lost race: %+v", it)
	}
}

func testDeleteItemFails(t *testing.T, e *emulator) {
	ctx := context.Background()
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	it := mustFile(t, s, filing(&ids{}, "alice", brainwire.BucketIdeas, brainwire.StatusClassified, baseTime))
	f.add(&fault{method: http.MethodDelete, path: "/colls/Inbox/docs/" + it.ID, err: errInjected})

	wantCode(t, s.DeleteInboxItem(ctx, "alice", it.ID), brainwire.EUnavailable)
	// The item stays visible, so the person can delete it again.
	mustGetItem(t, s, "alice", it.ID)
	if recordExists(t, s, "alice", brainwire.BucketIdeas, it.FiledRecordID) {
		t.Error("the bucket record survived")
	}
	if err := s.DeleteInboxItem(ctx, "alice", it.ID); err != nil {
		t.Fatalf("second DeleteInboxItem: %v", err)
	}
	if n := countAll(t, s, "alice"); len(n) != 0 {
		t.Errorf("documents = %v", n)
	}
}

func testValidation(t *testing.T, e *emulator) {
	ctx := context.Background()
	f := newFaults()
	s := e.open(t, storeOptions{faults: f})
	before := len(f.requests())
	g := &ids{}
	bad := func(mod func(*brainwire.Filing)) brainwire.Filing {
		fl := filing(g, "alice", brainwire.BucketPeople, brainwire.StatusClassified, baseTime)
		mod(&fl)
		return fl
	}
	// Beyond the shared rules (storetest): ids Cosmos DB cannot hold.
	for name, fl := range map[string]brainwire.Filing{
		"inbox id":  bad(func(f *brainwire.Filing) { f.NewInboxID = "a/b" }),
		"record id": bad(func(f *brainwire.Filing) { f.NewRecordID = "a/b" }),
		"status":    bad(func(f *brainwire.Filing) { f.Status = "filed" }),
	} {
		_, err := s.File(ctx, fl)
		if brainwire.ErrorCode(err) != brainwire.EInvalid {
			t.Errorf("%s: File = %v, want EInvalid", name, err)
		}
	}
	_, err := s.GetBucketRecord(ctx, "alice", "Misc", "x")
	wantCode(t, err, brainwire.EInvalid)
	_, err = s.GetInboxItem(ctx, "alice", "a/b")
	wantCode(t, err, brainwire.ENotFound)
	_, err = s.Recategorize(ctx, "alice", "x", "Misc", "rec-x", "user", baseTime)
	wantCode(t, err, brainwire.EInvalid)
	// Cursors that decode but name no position.
	for _, c := range []string{"garbage", "e30", "eyJ0IjoieCIsImkiOiJ5In0"} {
		_, err := s.ListInbox(ctx, "alice", brainwire.ListOptions{Cursor: c})
		wantCode(t, err, brainwire.EInvalid)
	}
	if reqs := f.requests()[before:]; len(reqs) != 0 {
		t.Errorf("invalid calls reached the service: %v", reqs)
	}
}
