package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

var fileTests = []test{
	{"Classified", testFileClassified},
	{"EachKind", testFileEachKind},
	{"Invalid", testFileInvalid},
	{"IDTaken", testIDTaken},
	{"CanceledContext", testFileCanceledContext},
	{"Concurrently", func(t *testing.T, e *env) { e.fileConcurrently(e.s) }},
}

// fileConcurrently files captures at once over stores while others list:
// every filing succeeds (no store error for a busy database), with its
// record, and the inbox lists each once.
func (e *env) fileConcurrently(stores ...brainwire.Store) {
	t := e.t
	const n = 40
	filings := make([]brainwire.Filing, n)
	for i := range filings {
		filings[i] = e.filing(brainwire.StatusClassified, brainwire.Buckets[i%len(brainwire.Buckets)])
	}
	var wg sync.WaitGroup
	for i, f := range filings {
		s := stores[i%len(stores)]
		wg.Go(func() {
			if _, err := s.File(e.ctx, f); err != nil {
				t.Errorf("File #%d: %v", i, err)
			}
		})
		wg.Go(func() {
			if _, err := s.ListInbox(e.ctx, e.user, brainwire.ListOptions{Limit: 5}); err != nil {
				t.Errorf("ListInbox #%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	var want []string
	for _, f := range filings {
		want = append(want, f.NewInboxID)
		if r := e.record(f.Classification.Bucket, f.NewRecordID); r.InboxRecordID != f.NewInboxID {
			t.Errorf("record of %s links %s", f.NewInboxID, r.InboxRecordID)
		}
	}
	got, _ := e.listAll(brainwire.ListOptions{Limit: 100})
	listed := ids(got)
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("filed %d, listed %d: not the same", len(want), len(listed))
	}
}

// contents is everything the user's store holds: the items, newest
// first, and the record each links to.
type contents struct {
	Items   []brainwire.InboxItem
	Records []brainwire.BucketRecord
}

func (e *env) contents() contents {
	e.t.Helper()
	items, _ := e.listAll(brainwire.ListOptions{})
	c := contents{Items: items}
	for _, it := range items {
		if it.FiledRecordID != "" {
			c.Records = append(c.Records, e.record(it.ClassificationMeta.Bucket, it.FiledRecordID))
		}
	}
	return c
}

// A write that would take an id in use fails (EConflict) and changes
// nothing: no item or record half-written, none replaced. Record ids are
// unique within a bucket.
func testIDTaken(t *testing.T, e *env) {
	classified := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketIdeas))
	misunderstood := e.file(e.filing(brainwire.StatusMisunderstood, ""))
	pending := e.file(e.filing(brainwire.StatusPending, brainwire.BucketPeople))
	// An Ideas record under the id of pending's People record.
	twin := e.filing(brainwire.StatusClassified, brainwire.BucketIdeas)
	twin.NewRecordID = pending.FiledRecordID
	e.file(twin)
	file := func(f brainwire.Filing) error { _, err := e.s.File(e.ctx, f); return err }
	// A new capture's record, if its item cannot be written, must go too.
	var orphan string
	newFiling := func(status string, mutate func(*brainwire.Filing)) error {
		f := e.filing(status, brainwire.BucketIdeas)
		mutate(&f)
		orphan = f.NewRecordID
		return file(f)
	}
	refiling := func(it brainwire.InboxItem) error {
		f := e.refiling(it, brainwire.StatusClassified, brainwire.BucketIdeas)
		f.NewRecordID = classified.FiledRecordID
		return file(f)
	}
	recategorize := func(it brainwire.InboxItem, bucket, recordID string) error {
		_, err := e.s.Recategorize(e.ctx, e.user, it.ID, bucket, recordID, "user", at(100))
		return err
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"a new capture's inbox id", func() error {
			return newFiling(brainwire.StatusClassified, func(f *brainwire.Filing) { f.NewInboxID = classified.ID })
		}},
		{"a classified capture's record id", func() error {
			return newFiling(brainwire.StatusClassified, func(f *brainwire.Filing) { f.NewRecordID = classified.FiledRecordID })
		}},
		{"a pending capture's record id", func() error {
			return newFiling(brainwire.StatusPending, func(f *brainwire.Filing) { f.NewRecordID = classified.FiledRecordID })
		}},
		{"a misunderstood item's refile's record id", func() error { return refiling(misunderstood) }},
		{"a pending item's refile's record id", func() error { return refiling(pending) }},
		{"a recategorized item's new record id", func() error {
			return recategorize(misunderstood, brainwire.BucketIdeas, classified.FiledRecordID)
		}},
		{"a moved record's id in its new bucket", func() error { return recategorize(pending, brainwire.BucketIdeas, newID("rec")) }},
	} {
		before := e.contents()
		orphan = ""
		checkCode(t, tc.name, tc.call(), brainwire.EConflict)
		exact(t, "after "+tc.name, e.contents(), before)
		if orphan != "" && orphan != classified.FiledRecordID {
			e.noRecord(orphan)
		}
	}
}

func testFileClassified(t *testing.T, e *env) {
	f := e.filing(brainwire.StatusClassified, brainwire.BucketPeople)
	got := e.file(f)
	// In literal values, so that they hold whatever the helpers say: the
	// filing's, with its times in UTC.
	c := brainwire.Classification{Bucket: "People", Confidence: 0.91,
		AllScores:    map[string]float64{"People": 0.91, "Ideas": 0.07, "Admin": 0.015625},
		ClassifiedBy: "Classifier", AgentChain: []string{"Orchestrator", "Classifier"},
		ClassifiedAt: time.Date(2026, time.March, 14, 8, 26, 52, 89_793_238, time.UTC)}
	filedAt := time.Date(2026, time.March, 14, 8, 26, 53, 589_793_238, time.UTC)
	check(t, "item", got, brainwire.InboxItem{ID: f.NewInboxID, UserID: e.user,
		RawText: "capture 0: ask Zoë about the “garden” plan ✓\nsecond line", Title: "Garden plan 0",
		Source: "text", Status: "classified", ClassificationMeta: &c, FiledRecordID: f.NewRecordID,
		UpstreamThreadID: f.UpstreamThreadID, CreatedAt: filedAt, UpdatedAt: filedAt,
		AgentRun: &brainwire.AgentRun{RunID: f.AgentRun.RunID, AgentVersion: "2026-03-14", InstructionsHash: "3f2a9c1b04de",
			Model: "gpt-4o", Outcome: "classified", Bucket: "People", Confidence: 0.91,
			TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203300"}})
	check(t, "record", e.onlyRecord("People", f.NewRecordID), brainwire.BucketRecord{ID: f.NewRecordID, UserID: e.user,
		Bucket: "People", RawText: got.RawText, Title: "Garden plan 0", ClassificationMeta: &c, InboxRecordID: f.NewInboxID, CreatedAt: filedAt})
	items, _ := e.listAll(brainwire.ListOptions{})
	if len(items) != 1 {
		t.Errorf("inbox holds %d items, want 1", len(items))
	}
}

// Each kind of new filing makes its item, listed under its status, and a
// bucket record, in its bucket only, when it files one (classified and
// pending).
func testFileEachKind(t *testing.T, e *env) {
	type kind struct {
		name, status, bucket string
		mutate               func(*brainwire.Filing)
	}
	kinds := []kind{
		{"PendingVoice", brainwire.StatusPending, brainwire.BucketIdeas, func(f *brainwire.Filing) { f.Source = brainwire.KindVoice }},
		{"Misunderstood", brainwire.StatusMisunderstood, "", nil},
		// What files no record needs no record id.
		{"MisunderstoodWithoutRecordID", brainwire.StatusMisunderstood, "", func(f *brainwire.Filing) { f.NewRecordID = "" }},
		{"UnresolvedVoice", brainwire.StatusUnresolved, "", func(f *brainwire.Filing) { f.NewRecordID, f.Source = "", brainwire.KindVoice }},
		// Optional fields left empty come back empty, not as defaults.
		{"OptionalFieldsEmpty", brainwire.StatusClassified, brainwire.BucketAdmin, func(f *brainwire.Filing) {
			f.Title, f.UpstreamThreadID, f.AgentRun = "", "", nil
			f.Classification = brainwire.Classification{Bucket: brainwire.BucketAdmin, Confidence: 0.6}
		}},
	}
	for _, b := range brainwire.Buckets {
		kinds = append(kinds, kind{"ClassifiedIn" + b, brainwire.StatusClassified, b, nil})
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			e := newEnv(t, e.s)
			f := e.filing(k.status, k.bucket)
			if k.mutate != nil {
				k.mutate(&f)
			}
			got := e.file(f)
			want := filed(f)
			check(t, "item", got, want)
			if k.bucket != "" {
				check(t, "record", e.onlyRecord(k.bucket, f.NewRecordID), recordOf(want, f.Now))
			} else if f.NewRecordID != "" {
				e.noRecord(f.NewRecordID)
			}
			if items, _ := e.listAll(brainwire.ListOptions{Status: k.status}); !slices.Equal(ids(items), []string{got.ID}) {
				t.Errorf("%s items %q, want [%s]", k.status, ids(items), got.ID)
			}
		})
	}
}

func testFileInvalid(t *testing.T, e *env) {
	cases := []struct {
		name   string
		mutate func(f *brainwire.Filing)
	}{
		{"unknown bucket", func(f *brainwire.Filing) { f.Classification.Bucket = "Recipes" }},
		{"bucket in wrong case", func(f *brainwire.Filing) { f.Classification.Bucket = "people" }},
		{"no bucket", func(f *brainwire.Filing) { f.Classification.Bucket = "" }},
		{"pending without bucket", func(f *brainwire.Filing) {
			f.Status = brainwire.StatusPending
			f.Classification.Bucket = ""
		}},
		{"unresolved with a bucket", func(f *brainwire.Filing) { f.Status = brainwire.StatusUnresolved }},
		{"unknown status", func(f *brainwire.Filing) { f.Status = "filed" }},
		{"no status", func(f *brainwire.Filing) { f.Status = "" }},
		{"no user", func(f *brainwire.Filing) { f.UserID = "" }},
		{"no inbox id", func(f *brainwire.Filing) { f.NewInboxID = "" }},
		{"no record id", func(f *brainwire.Filing) { f.NewRecordID = "" }},
		{"unknown source", func(f *brainwire.Filing) { f.Source = "fax" }},
		{"no source", func(f *brainwire.Filing) { f.Source = "" }},
		{"zero now", func(f *brainwire.Filing) { f.Now = time.Time{} }},
	}
	for _, tc := range cases {
		f := e.filing(brainwire.StatusClassified, brainwire.BucketPeople)
		tc.mutate(&f)
		it, err := e.s.File(e.ctx, f)
		checkCode(t, tc.name, err, brainwire.EInvalid)
		if err == nil {
			t.Errorf("%s: filed %+v", tc.name, it)
		}
		e.noRecord(f.NewRecordID)
	}
	if items, _ := e.listAll(brainwire.ListOptions{}); len(items) != 0 {
		t.Errorf("invalid filings left %d items: %q", len(items), ids(items))
	}
}

func testFileCanceledContext(t *testing.T, e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	f := e.filing(brainwire.StatusClassified, brainwire.BucketPeople)
	_, err := e.s.File(ctx, f)
	checkCanceled(t, "File", err)
	_, err = e.s.GetInboxItem(e.ctx, e.user, f.NewInboxID)
	checkCode(t, "GetInboxItem after a cancelled File", err, brainwire.ENotFound)
	e.noRecord(f.NewRecordID)
}

var refileTests = []test{
	{"Transitions", testRefileTransitions},
	{"KeepsThread", testRefileKeepsThread},
	{"CountsRounds", testRefileCountsRounds},
	{"Invalid", testRefileInvalid},
	{"AgentRun", testRefileAgentRun},
}

// A follow-up's filing replaces the item's agent run with its own; a
// refile that brings none keeps the item's.
func testRefileAgentRun(t *testing.T, e *env) {
	before := e.file(e.filing(brainwire.StatusMisunderstood, brainwire.BucketIdeas))
	f := e.refiling(before, brainwire.StatusClassified, brainwire.BucketProjects)
	got := e.file(f)
	if got.AgentRun == nil || got.AgentRun.RunID != f.AgentRun.RunID || got.AgentRun.Outcome != brainwire.OutcomeClassified {
		t.Fatalf("refiled item's run %+v, want the follow-up's %+v", got.AgentRun, f.AgentRun)
	}
	g := e.refiling(got, brainwire.StatusPending, brainwire.BucketAdmin)
	g.AgentRun = nil
	again := e.file(g)
	check(t, "refiled without a run", again, refiled(got, g))
	if again.AgentRun == nil || again.AgentRun.RunID != f.AgentRun.RunID {
		t.Fatalf("refile without a run: %+v, want the item's %+v", again.AgentRun, got.AgentRun)
	}
}

// refiling returns a follow-up filing of item: what the follow-up path sends.
func (e *env) refiling(item brainwire.InboxItem, status, bucket string) brainwire.Filing {
	f := e.filing(status, bucket)
	f.InboxItemID = item.ID
	f.UpstreamThreadID = item.UpstreamThreadID
	f.RawText = item.RawText + "\nfollow-up: it is about the community garden"
	f.Source = brainwire.KindFollowUp
	f.FollowUpRound = item.FollowUpRounds + 1
	return f
}

func testRefileCountsRounds(t *testing.T, e *env) {
	item := e.file(e.filing(brainwire.StatusMisunderstood, ""))
	if item.FollowUpRounds != 0 {
		t.Fatalf("new item has FollowUpRounds %d", item.FollowUpRounds)
	}
	for round := 1; round <= 2; round++ {
		item = e.file(e.refiling(item, brainwire.StatusMisunderstood, ""))
		if item.FollowUpRounds != round {
			t.Fatalf("after follow-up %d: FollowUpRounds = %d", round, item.FollowUpRounds)
		}
	}
	// A refile that names no round keeps the count; a read sees it stored.
	f := e.refiling(item, brainwire.StatusClassified, brainwire.BucketIdeas)
	f.FollowUpRound = 0
	e.file(f)
	got, err := e.s.GetInboxItem(e.ctx, e.user, item.ID)
	if err != nil || got.FollowUpRounds != 2 {
		t.Fatalf("stored FollowUpRounds = %d (%v), want 2", got.FollowUpRounds, err)
	}
}

// The thread is what the next follow-up continues on: a refiling that names
// none must not lose it.
func testRefileKeepsThread(t *testing.T, e *env) {
	before := e.file(e.filing(brainwire.StatusMisunderstood, ""))
	f := e.refiling(before, brainwire.StatusMisunderstood, "")
	f.UpstreamThreadID = ""
	got := e.file(f)
	if got.UpstreamThreadID != before.UpstreamThreadID {
		t.Errorf("UpstreamThreadID = %q, want the item's %q", got.UpstreamThreadID, before.UpstreamThreadID)
	}
	check(t, "refiled item", got, refiled(before, f))
}

func testRefileInvalid(t *testing.T, e *env) {
	before := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	rec := e.record(brainwire.BucketPeople, before.FiledRecordID)
	for _, tc := range []struct{ name, status, bucket string }{
		{"unknown bucket", brainwire.StatusClassified, "Recipes"},
		{"unknown status", "done", brainwire.BucketIdeas},
		{"unresolved", brainwire.StatusUnresolved, ""},
	} {
		f := e.refiling(before, tc.status, tc.bucket)
		_, err := e.s.File(e.ctx, f)
		checkCode(t, tc.name, err, brainwire.EInvalid)
		e.noRecord(f.NewRecordID)
	}
	check(t, "item", e.get(before.ID), before)
	check(t, "record", e.record(brainwire.BucketPeople, rec.ID), rec)
}

// A refile from each status: the same item, refiled as the contract says;
// the record it had gone, the one the refile files (if any) in its bucket
// only; and one item in the Inbox still.
func testRefileTransitions(t *testing.T, e *env) {
	for _, tc := range []struct{ from, fromBucket, to, toBucket string }{
		{brainwire.StatusMisunderstood, "", brainwire.StatusClassified, brainwire.BucketProjects},
		{brainwire.StatusMisunderstood, "", brainwire.StatusMisunderstood, ""},
		{brainwire.StatusPending, brainwire.BucketPeople, brainwire.StatusClassified, brainwire.BucketIdeas},
		{brainwire.StatusClassified, brainwire.BucketAdmin, brainwire.StatusMisunderstood, ""},
	} {
		t.Run(tc.from+"To"+tc.to, func(t *testing.T) {
			e := newEnv(t, e.s)
			orig := e.filing(tc.from, tc.fromBucket)
			orig.Source = brainwire.KindVoice
			before := e.file(orig)
			f := e.refiling(before, tc.to, tc.toBucket)
			want := refiled(before, f)
			check(t, "refiled item", e.file(f), want)
			if before.FiledRecordID != "" {
				e.noRecord(before.FiledRecordID)
			}
			if tc.toBucket != "" {
				check(t, "record", e.onlyRecord(tc.toBucket, f.NewRecordID), recordOf(want, f.Now))
			} else {
				e.noRecord(f.NewRecordID)
			}
			if items, _ := e.listAll(brainwire.ListOptions{}); !slices.Equal(ids(items), []string{before.ID}) {
				t.Errorf("inbox = %q, want only %q", ids(items), before.ID)
			}
			_, err := e.s.GetInboxItem(e.ctx, e.user, f.NewInboxID)
			checkCode(t, "GetInboxItem(refiling's NewInboxID)", err, brainwire.ENotFound)
		})
	}
}
