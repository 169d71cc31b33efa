package brainwire_test

import (
	"testing"
	"time"

	"github.com/brainwire/brainwire"
)

var filedAt = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func filing(status string) brainwire.Filing {
	return brainwire.Filing{
		UserID: "u1", NewInboxID: "in-1", NewRecordID: "rec-1",
		RawText: "Call Sarah", Title: "Call Sarah", Source: brainwire.KindVoice, Status: status,
		Classification:   brainwire.Classification{Bucket: brainwire.BucketPeople, Confidence: 0.9},
		UpstreamThreadID: "thread_1", Now: filedAt,
	}
}

func TestNewItemLinksTheRecordOnlyWhenOneIsFiled(t *testing.T) {
	for status, wantRecord := range map[string]string{
		brainwire.StatusClassified:    "rec-1",
		brainwire.StatusPending:       "rec-1",
		brainwire.StatusMisunderstood: "",
	} {
		f := filing(status)
		it := f.NewItem()
		if it.FiledRecordID != wantRecord || f.FilesRecord() != (wantRecord != "") {
			t.Errorf("%s: FiledRecordID %q, FilesRecord %v; want %q", status, it.FiledRecordID, f.FilesRecord(), wantRecord)
		}
		if it.ID != "in-1" || it.Status != status || !it.CreatedAt.Equal(filedAt) || !it.UpdatedAt.Equal(filedAt) {
			t.Errorf("%s: item %+v", status, it)
		}
		// The classification is kept whatever the status, as a copy.
		if c := it.ClassificationMeta; c == nil || c == &f.Classification || c.Bucket != f.Classification.Bucket || c.Confidence != f.Classification.Confidence {
			t.Errorf("%s: ClassificationMeta %+v", status, it.ClassificationMeta)
		}
	}
}

func TestRefileKeepsTheCapture(t *testing.T) {
	before := filing(brainwire.StatusMisunderstood).NewItem()
	before.FollowUpRounds = 1

	f := filing(brainwire.StatusClassified)
	f.InboxItemID, f.NewInboxID, f.NewRecordID = before.ID, "", "rec-2"
	f.Source, f.UpstreamThreadID, f.FollowUpRound = "", "", 0
	f.RawText, f.Now = "Call Sarah about the garden", filedAt.Add(time.Minute)
	it := f.Refile(before)
	if it.ID != before.ID || it.Source != before.Source || !it.CreatedAt.Equal(before.CreatedAt) {
		t.Errorf("refiled item lost its identity: %+v", it)
	}
	if it.UpstreamThreadID != "thread_1" || it.FollowUpRounds != 1 {
		t.Errorf("thread %q, rounds %d; want the item's", it.UpstreamThreadID, it.FollowUpRounds)
	}
	if it.RawText != f.RawText || it.Status != f.Status || it.FiledRecordID != "rec-2" || !it.UpdatedAt.Equal(f.Now) {
		t.Errorf("refiled item does not carry the filing: %+v", it)
	}

	f.UpstreamThreadID, f.FollowUpRound = "thread_2", 2
	if it := f.Refile(before); it.UpstreamThreadID != "thread_2" || it.FollowUpRounds != 2 {
		t.Errorf("thread %q, rounds %d; want the filing's", it.UpstreamThreadID, it.FollowUpRounds)
	}
}

func TestRecordLinksBack(t *testing.T) {
	it := filing(brainwire.StatusPending).NewItem()
	r := it.Record(filedAt)
	if r.ID != it.FiledRecordID || r.InboxRecordID != it.ID || r.UserID != it.UserID ||
		r.Bucket != brainwire.BucketPeople || r.RawText != it.RawText || r.Title != it.Title || !r.CreatedAt.Equal(filedAt) {
		t.Errorf("record %+v of item %+v", r, it)
	}
	if c := r.ClassificationMeta; c == nil || c == it.ClassificationMeta || c.Bucket != it.ClassificationMeta.Bucket || c.Confidence != it.ClassificationMeta.Confidence {
		t.Errorf("record classification %+v: want an equal copy of the item's", r.ClassificationMeta)
	}
}

// An unresolved capture is a new item in no bucket: a filing that names a
// bucket, or would refile an item, is refused before anything is written.
func TestUnresolvedFilings(t *testing.T) {
	f := filing(brainwire.StatusUnresolved)
	f.Classification = brainwire.Classification{ClassifiedBy: "Classifier"}
	f.NewRecordID = ""
	if err := f.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	it := f.NewItem()
	if f.FilesRecord() || it.FiledRecordID != "" || it.Status != brainwire.StatusUnresolved {
		t.Errorf("unresolved item %+v (FilesRecord %v): want no bucket record", it, f.FilesRecord())
	}
	withBucket := f
	withBucket.Classification.Bucket = brainwire.BucketIdeas
	refile := f
	refile.InboxItemID = "in-0"
	for name, bad := range map[string]brainwire.Filing{"with a bucket": withBucket, "as a refile": refile} {
		if code := brainwire.ErrorCode(bad.Validate()); code != brainwire.EInvalid {
			t.Errorf("unresolved filing %s: code %q, want %q", name, code, brainwire.EInvalid)
		}
	}
	if o := brainwire.OutcomeOfStatus(brainwire.StatusUnresolved); o != brainwire.OutcomeUnresolved {
		t.Errorf("OutcomeOfStatus(unresolved) = %q", o)
	}
	if _, err := (brainwire.ListOptions{Status: brainwire.StatusUnresolved}).PageSize(); err != nil {
		t.Errorf("listing unresolved items: %v", err)
	}
}
