package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

var getTests = []test{
	{"Unknown", testUnknownItem},
	{"BucketRecordLookups", testGetBucketRecordLookups},
}

// itemCalls makes, as user, every call that names an inbox item, on id,
// and returns their errors by method. A refile or a recategorize that
// wrongly succeeded would file a record with id recordID.
func (e *env) itemCalls(user, id string) (errs map[string]error, recordID string) {
	f := e.filing(brainwire.StatusClassified, brainwire.BucketAdmin)
	f.UserID, f.InboxItemID = user, id
	_, get := e.s.GetInboxItem(e.ctx, user, id)
	_, refile := e.s.File(e.ctx, f)
	_, recat := e.s.Recategorize(e.ctx, user, id, brainwire.BucketAdmin, f.NewRecordID, "user", f.Now)
	_, claim := e.s.ClaimFollowUp(e.ctx, user, id, e.claim(1))
	return map[string]error{"GetInboxItem": get, "File (refile)": refile, "Recategorize": recat, "ClaimFollowUp": claim,
		"DeleteInboxItem": e.s.DeleteInboxItem(e.ctx, user, id)}, f.NewRecordID
}

// checkAbsent checks that every call on id, as user, finds no item, and
// files no record; it returns the id such a record would have had.
func (e *env) checkAbsent(what, user, id string) (recordID string) {
	e.t.Helper()
	errs, recordID := e.itemCalls(user, id)
	for method, err := range errs {
		checkCode(e.t, what+": "+method, err, brainwire.ENotFound)
	}
	e.noRecord(recordID)
	return recordID
}

// An id no item has, or a record's, names nothing to read or change.
func testUnknownItem(t *testing.T, e *env) {
	it := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketIdeas))
	e.checkAbsent("unknown id", e.user, newID("inbox"))
	e.checkAbsent("a record's id", e.user, it.FiledRecordID)
	check(t, "item", e.get(it.ID), it)
	e.onlyRecord(brainwire.BucketIdeas, it.FiledRecordID)
	_, err := e.s.GetInboxItem(e.ctx, e.user, "")
	if code := brainwire.ErrorCode(err); code != brainwire.ENotFound && code != brainwire.EInvalid {
		t.Errorf("GetInboxItem(empty id): code %q (%v), want %s or %s", code, err, brainwire.ENotFound, brainwire.EInvalid)
	}
}

func testGetBucketRecordLookups(t *testing.T, e *env) {
	it := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	_, err := e.s.GetBucketRecord(e.ctx, e.user, "Recipes", it.FiledRecordID)
	checkCode(t, "GetBucketRecord(unknown bucket)", err, brainwire.EInvalid)
	_, err = e.s.GetBucketRecord(e.ctx, e.user, brainwire.BucketPeople, newID("rec"))
	checkCode(t, "GetBucketRecord(unknown id)", err, brainwire.ENotFound)
	_, err = e.s.GetBucketRecord(e.ctx, e.user, brainwire.BucketPeople, it.ID)
	checkCode(t, "GetBucketRecord(the inbox item's id)", err, brainwire.ENotFound)
	e.onlyRecord(brainwire.BucketPeople, it.FiledRecordID)
}

var listTests = []test{
	{"Empty", testListEmpty},
	{"NewestFirst", testListNewestFirst},
	{"Pages", testListPages},
	{"SameCreatedAt", testListSameCreatedAt},
	{"StatusFilter", testListStatusFilter},
	{"PagesWhileRecategorized", testListPagesWhileRecategorized},
	{"Invalid", testListInvalid},
}

// fileMany files n captures, cycling through statuses and buckets, and
// returns them newest first.
func (e *env) fileMany(n int) []brainwire.InboxItem {
	e.t.Helper()
	statuses := []string{brainwire.StatusClassified, brainwire.StatusPending, brainwire.StatusMisunderstood, brainwire.StatusUnresolved}
	var out []brainwire.InboxItem
	for i := range n {
		status := statuses[i%len(statuses)]
		bucket := brainwire.Buckets[i%len(brainwire.Buckets)]
		if status == brainwire.StatusMisunderstood || status == brainwire.StatusUnresolved {
			bucket = ""
		}
		it, err := e.s.File(e.ctx, e.filing(status, bucket))
		if err != nil {
			e.t.Fatalf("File #%d: %v", i, err)
		}
		out = append(out, it)
	}
	slices.Reverse(out)
	return out
}

func testListEmpty(t *testing.T, e *env) {
	page, err := e.s.ListInbox(e.ctx, e.user, brainwire.ListOptions{})
	if err != nil {
		t.Fatalf("ListInbox: %v", err)
	}
	if len(page.Items) != 0 || page.NextCursor != "" {
		t.Errorf("empty inbox: %d items, NextCursor %q; want none and \"\"", len(page.Items), page.NextCursor)
	}
}

// Items are filed out of time order, on whole seconds and fractions of
// them, in several zones: the list follows the instant of CreatedAt, not
// the order of writes or how a time is spelled.
func testListNewestFirst(t *testing.T, e *env) {
	whole := base.Truncate(time.Second)
	var want []brainwire.InboxItem
	for _, now := range []time.Time{whole.Add(time.Second).In(time.FixedZone("PST", -8*3600)), whole,
		whole.Add(-100 * time.Millisecond).In(time.FixedZone("EET", 2*3600)), whole.Add(100 * time.Millisecond), whole.Add(2 * time.Second)} {
		f := e.filing(brainwire.StatusClassified, brainwire.BucketIdeas)
		f.Now = now
		want = append(want, e.file(f))
	}
	slices.SortFunc(want, func(a, b brainwire.InboxItem) int { return b.CreatedAt.Compare(a.CreatedAt) })

	page, err := e.s.ListInbox(e.ctx, e.user, brainwire.ListOptions{})
	if err != nil {
		t.Fatalf("ListInbox: %v", err)
	}
	if !slices.Equal(ids(page.Items), ids(want)) {
		t.Fatalf("order = %q, want %q", ids(page.Items), ids(want))
	}
	for i := range want {
		exact(t, "listed item "+want[i].ID, page.Items[i], want[i])
	}
	if page.NextCursor != "" {
		t.Errorf("NextCursor = %q on the only page", page.NextCursor)
	}
}

// Pages hold the limit asked for (brainwire.DefaultPageSize when none,
// brainwire.MaxPageSize at most), newest first, each item once, and no
// empty page follows the last item.
func testListPages(t *testing.T, e *env) {
	for _, tc := range []struct {
		name  string
		n     int
		limit int
		sizes []int
	}{
		{"Limit", 25, 10, []int{10, 10, 5}},
		{"ExactMultiple", 20, 10, []int{10, 10}},
		{"DefaultLimit", brainwire.DefaultPageSize + 5, 0, []int{brainwire.DefaultPageSize, 5}},
		{"MaxLimit", brainwire.MaxPageSize + 1, 10 * brainwire.MaxPageSize, []int{brainwire.MaxPageSize, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, e.s)
			want := e.fileMany(tc.n)
			got, sizes := e.listAll(brainwire.ListOptions{Limit: tc.limit})
			if !slices.Equal(sizes, tc.sizes) {
				t.Errorf("page sizes = %v, want %v", sizes, tc.sizes)
			}
			if !slices.Equal(ids(got), ids(want)) {
				t.Errorf("paged ids = %q\nwant %q", ids(got), ids(want))
			}
		})
	}
}

// Captures filed in the same millisecond must still page without loss or
// repetition.
func testListSameCreatedAt(t *testing.T, e *env) {
	var filed []string
	for range 7 {
		f := e.filing(brainwire.StatusMisunderstood, "")
		f.Now = base
		filed = append(filed, e.file(f).ID)
	}
	later := e.filing(brainwire.StatusMisunderstood, "")
	later.Now = base.Add(time.Hour)
	newest := e.file(later).ID

	got, _ := e.listAll(brainwire.ListOptions{Limit: 3})
	if len(got) != 8 || got[0].ID != newest {
		t.Fatalf("listed %q, want %s first then the 7 others", ids(got), newest)
	}
	rest := ids(got[1:])
	slices.Sort(rest)
	slices.Sort(filed)
	if !slices.Equal(rest, filed) {
		t.Errorf("same-time items listed %q, want each of %q once", rest, filed)
	}
}

func testListStatusFilter(t *testing.T, e *env) {
	all := e.fileMany(25)
	for _, status := range []string{brainwire.StatusClassified, brainwire.StatusPending, brainwire.StatusMisunderstood, brainwire.StatusUnresolved} {
		var want []brainwire.InboxItem
		for _, it := range all {
			if it.Status == status {
				want = append(want, it)
			}
		}
		got, _ := e.listAll(brainwire.ListOptions{Status: status, Limit: 3})
		if !slices.Equal(ids(got), ids(want)) {
			t.Errorf("status %s: listed %q\nwant %q", status, ids(got), ids(want))
		}
	}
}

// An item keeps its place when a person recategorizes it, so a listing
// that pages on while people correct items (export-labels' over the
// classified ones) shows each item once.
func testListPagesWhileRecategorized(t *testing.T, e *env) {
	var want []string
	for _, it := range e.fileMany(12) {
		if it.Status == brainwire.StatusClassified {
			want = append(want, it.ID)
		}
	}
	// The oldest is corrected before the listing starts.
	if _, err := e.s.Recategorize(e.ctx, e.user, want[len(want)-1], brainwire.BucketAdmin, newID("rec"), "user", at(100)); err != nil {
		t.Fatalf("Recategorize: %v", err)
	}
	var got []string
	opts := brainwire.ListOptions{Status: brainwire.StatusClassified, Limit: 1}
	for range 100 {
		page, err := e.s.ListInbox(e.ctx, e.user, opts)
		if err != nil {
			t.Fatalf("ListInbox: %v", err)
		}
		for _, it := range page.Items {
			got = append(got, it.ID)
			for i, b := range []string{brainwire.BucketIdeas, brainwire.BucketPeople} {
				if _, err := e.s.Recategorize(e.ctx, e.user, it.ID, b, newID("rec"), "user", at(200+10*len(got)+i)); err != nil {
					t.Fatalf("Recategorize: %v", err)
				}
			}
		}
		if page.NextCursor == "" {
			break
		}
		opts.Cursor = page.NextCursor
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %q while recategorizing\nwant %q", got, want)
	}
}

func testListInvalid(t *testing.T, e *env) {
	e.fileMany(3)
	for _, tc := range []struct {
		name string
		user string
		opts brainwire.ListOptions
	}{
		{"unknown status", e.user, brainwire.ListOptions{Status: "archived"}},
		{"negative limit", e.user, brainwire.ListOptions{Limit: -1}},
		{"malformed cursor", e.user, brainwire.ListOptions{Cursor: "not a cursor!"}},
		{"no user", "", brainwire.ListOptions{}},
	} {
		_, err := e.s.ListInbox(e.ctx, tc.user, tc.opts)
		checkCode(t, tc.name, err, brainwire.EInvalid)
	}
}

var deleteTests = []test{
	{"Classified", testDeleteClassified},
	{"InboxOnly", testDeleteInboxOnly},
}

func testDeleteClassified(t *testing.T, e *env) {
	keep := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	keepRec := e.record(brainwire.BucketPeople, keep.FiledRecordID)
	it := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))

	if err := e.s.DeleteInboxItem(e.ctx, e.user, it.ID); err != nil {
		t.Fatalf("DeleteInboxItem: %v", err)
	}
	_, err := e.s.GetInboxItem(e.ctx, e.user, it.ID)
	checkCode(t, "GetInboxItem after delete", err, brainwire.ENotFound)
	e.noRecord(it.FiledRecordID)
	err = e.s.DeleteInboxItem(e.ctx, e.user, it.ID)
	checkCode(t, "second DeleteInboxItem", err, brainwire.ENotFound)

	check(t, "other item", e.get(keep.ID), keep)
	check(t, "other record", e.record(brainwire.BucketPeople, keepRec.ID), keepRec)
	items, _ := e.listAll(brainwire.ListOptions{})
	if !slices.Equal(ids(items), []string{keep.ID}) {
		t.Errorf("inbox = %q, want [%s]", ids(items), keep.ID)
	}
}

// Misunderstood and unresolved items have no bucket record to delete.
func testDeleteInboxOnly(t *testing.T, e *env) {
	for _, status := range []string{brainwire.StatusMisunderstood, brainwire.StatusUnresolved} {
		it := e.file(e.filing(status, ""))
		if err := e.s.DeleteInboxItem(e.ctx, e.user, it.ID); err != nil {
			t.Fatalf("DeleteInboxItem(%s): %v", status, err)
		}
		_, err := e.s.GetInboxItem(e.ctx, e.user, it.ID)
		checkCode(t, "GetInboxItem after delete of a "+status+" item", err, brainwire.ENotFound)
	}
}

var recategorizeTests = []test{
	{"EachStatus", testRecategorizeEachStatus},
	{"InvalidBucket", testRecategorizeInvalidBucket},
}

// recategorized is before as a person filed it in bucket: the agent's
// confidence, scores, chain and run kept; the person's bucket, name and
// time; classified; its record moved (same id and creation time) or, for an
// item without one, made.
func recategorized(before brainwire.InboxItem, oldRec *brainwire.BucketRecord, bucket, newRecordID, by string, now time.Time) (brainwire.InboxItem, brainwire.BucketRecord) {
	it, c := before, brainwire.Classification{}
	if before.ClassificationMeta != nil {
		c = *before.ClassificationMeta
	}
	c.Bucket, c.ClassifiedBy, c.ClassifiedAt = bucket, by, now
	it.Status, it.ClassificationMeta, it.UpdatedAt, it.FollowUpClaim = brainwire.StatusClassified, &c, now, nil
	if oldRec == nil {
		it.FiledRecordID = newRecordID
		return it, recordOf(it, now)
	}
	return it, recordOf(it, oldRec.CreatedAt)
}

// recategorize calls Recategorize and checks its result against the stored
// documents and the expectation.
func (e *env) recategorize(before brainwire.InboxItem, oldRec *brainwire.BucketRecord, bucket string, now time.Time) (brainwire.InboxItem, brainwire.BucketRecord) {
	e.t.Helper()
	newRecordID := newID("rec")
	by := "user:" + e.user
	got, err := e.s.Recategorize(e.ctx, e.user, before.ID, bucket, newRecordID, by, now)
	if err != nil {
		e.t.Fatalf("Recategorize(%s -> %s): %v", before.ID, bucket, err)
	}
	wantItem, wantRec := recategorized(before, oldRec, bucket, newRecordID, by, now)
	check(e.t, "recategorized item", got, wantItem)
	exact(e.t, "Recategorize result vs stored item", got, e.get(before.ID))
	rec := e.onlyRecord(bucket, wantItem.FiledRecordID)
	check(e.t, "recategorized record", rec, wantRec)
	return got, rec
}

// A person files an item of each status into a bucket, or on into others:
// it is recategorized as the contract says (recategorize checks the item
// and its record), keeps its place, and is listed as classified only.
func testRecategorizeEachStatus(t *testing.T, e *env) {
	for _, tc := range []struct {
		status, from string
		to           []string
	}{
		{brainwire.StatusClassified, brainwire.BucketPeople, []string{brainwire.BucketProjects, brainwire.BucketAdmin}},
		{brainwire.StatusClassified, brainwire.BucketIdeas, []string{brainwire.BucketIdeas}},
		{brainwire.StatusPending, brainwire.BucketIdeas, []string{brainwire.BucketAdmin}},
		{brainwire.StatusMisunderstood, "", []string{brainwire.BucketPeople}},
		{brainwire.StatusUnresolved, "", []string{brainwire.BucketAdmin}},
	} {
		t.Run(tc.status+"In"+tc.from+"To"+strings.Join(tc.to, "Then"), func(t *testing.T) {
			e := newEnv(t, e.s)
			it := e.file(e.filing(tc.status, tc.from))
			var rec *brainwire.BucketRecord
			if tc.from != "" {
				r := e.record(tc.from, it.FiledRecordID)
				rec = &r
			}
			for i, b := range tc.to {
				got, r := e.recategorize(it, rec, b, at(100*(i+1)))
				it, rec = got, &r
			}
			for _, status := range []string{brainwire.StatusPending, brainwire.StatusMisunderstood, brainwire.StatusUnresolved} {
				if items, _ := e.listAll(brainwire.ListOptions{Status: status}); len(items) != 0 {
					t.Errorf("%s items after recategorize: %q", status, ids(items))
				}
			}
			if items, _ := e.listAll(brainwire.ListOptions{}); !slices.Equal(ids(items), []string{it.ID}) {
				t.Errorf("inbox = %q, want [%s]", ids(items), it.ID)
			}
		})
	}
}

func testRecategorizeInvalidBucket(t *testing.T, e *env) {
	it := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	rec := e.record(brainwire.BucketPeople, it.FiledRecordID)
	for _, b := range []string{"", "Recipes", "people"} {
		_, err := e.s.Recategorize(e.ctx, e.user, it.ID, b, newID("rec"), "user", at(100))
		checkCode(t, "Recategorize to "+b, err, brainwire.EInvalid)
	}
	check(t, "item", e.get(it.ID), it)
	check(t, "record", e.onlyRecord(brainwire.BucketPeople, rec.ID), rec)
}

var isolationTests = []test{
	{"OtherUser", testIsolationOtherUser},
}

// Another user's documents behave as if absent, and nothing they try changes
// them.
func testIsolationOtherUser(t *testing.T, e *env) {
	classified := e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	misunderstood := e.file(e.filing(brainwire.StatusMisunderstood, ""))
	rec := e.record(brainwire.BucketPeople, classified.FiledRecordID)

	mallory := newEnv(t, e.s)
	mallory.n = e.n
	for _, it := range []brainwire.InboxItem{classified, misunderstood} {
		e.noRecord(mallory.checkAbsent("other user", mallory.user, it.ID))
	}
	_, err := e.s.GetBucketRecord(e.ctx, mallory.user, brainwire.BucketPeople, rec.ID)
	checkCode(t, "other user's GetBucketRecord", err, brainwire.ENotFound)

	if items, _ := mallory.listAll(brainwire.ListOptions{}); len(items) != 0 {
		t.Errorf("other user lists %q, want nothing", ids(items))
	}

	// Ids are the user's own: another user may file under the same ones.
	same := mallory.filing(brainwire.StatusClassified, brainwire.BucketPeople)
	same.NewInboxID, same.NewRecordID = classified.ID, rec.ID
	if got := mallory.file(same); got.ID != classified.ID || got.UserID != mallory.user {
		t.Errorf("other user's filing under the same ids = %+v", got)
	}

	check(t, "classified item", e.get(classified.ID), classified)
	check(t, "misunderstood item", e.get(misunderstood.ID), misunderstood)
	check(t, "record", e.onlyRecord(brainwire.BucketPeople, rec.ID), rec)
	items, _ := e.listAll(brainwire.ListOptions{})
	if !slices.Equal(ids(items), []string{misunderstood.ID, classified.ID}) {
		t.Errorf("owner lists %q, want [%s %s]", ids(items), misunderstood.ID, classified.ID)
	}
}

var pingTests = []test{
	{"OK", func(t *testing.T, e *env) {
		if err := e.s.Ping(e.ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
	}},
}

var userTests = []test{
	{"List", testUsersList},
}

// A store that lists users lists everyone with an item, each once.
func testUsersList(t *testing.T, e *env) {
	lister, ok := e.s.(brainwire.UserLister)
	if !ok {
		t.Skip("the store does not list users")
	}
	other := newEnv(t, e.s)
	e.file(e.filing(brainwire.StatusClassified, brainwire.BucketPeople))
	e.file(e.filing(brainwire.StatusMisunderstood, ""))
	other.file(other.filing(brainwire.StatusPending, brainwire.BucketIdeas))
	users, err := lister.ListUsers(e.ctx)
	if err != nil {
		t.Fatalf("ListUsers: %v", err)
	}
	want := []string{e.user, other.user}
	slices.Sort(want)
	got := slices.Clone(users)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("ListUsers = %q, want %q", users, want)
	}
}
