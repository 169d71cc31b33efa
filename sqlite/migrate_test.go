package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/sqlite"
)

// schemaV2 is the schema files were at before items kept their agent run.
const schemaV2 = `
CREATE TABLE inbox (
	user_id TEXT NOT NULL, id TEXT NOT NULL, raw_text TEXT NOT NULL, title TEXT NOT NULL, source TEXT NOT NULL,
	status TEXT NOT NULL CHECK (status IN ('classified', 'pending', 'misunderstood')),
	classification TEXT, filed_record_id TEXT NOT NULL, foundry_thread_id TEXT NOT NULL,
	created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (user_id, id)
) STRICT;
CREATE INDEX inbox_by_created ON inbox (user_id, created_at DESC, id DESC);
CREATE INDEX inbox_by_status ON inbox (user_id, status, created_at DESC, id DESC);
CREATE TABLE bucket_records (
	user_id TEXT NOT NULL, bucket TEXT NOT NULL CHECK (bucket IN ('People', 'Projects', 'Ideas', 'Admin')),
	id TEXT NOT NULL, raw_text TEXT NOT NULL, title TEXT NOT NULL, classification TEXT,
	inbox_record_id TEXT NOT NULL, created_at INTEGER NOT NULL,
	PRIMARY KEY (user_id, bucket, id), UNIQUE (user_id, inbox_record_id),
	FOREIGN KEY (user_id, inbox_record_id) REFERENCES inbox (user_id, id) ON DELETE CASCADE
) STRICT;
ALTER TABLE inbox ADD COLUMN follow_up_rounds INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 2;
`

// oldFile writes a database file at schema, as an earlier version left
// it, and returns its path and a connection for adding rows: close it
// before opening the store.
func oldFile(t *testing.T, schema string) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "brainwire.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		t.Fatal(err)
	}
	return path, db
}

// TestOpenMigratesItemsWithoutAgentRuns opens a file written before items
// kept their agent run: its items read back without one, and take one when
// a follow-up refiles them.
func TestOpenMigratesItemsWithoutAgentRuns(t *testing.T) {
	path, db := oldFile(t, schemaV2)
	created := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	if _, err := db.Exec(`INSERT INTO inbox VALUES ('u1', 'old-1', 'what about the thing', 'Thing', 'text', 'misunderstood',
		'{"bucket":"Ideas","confidence":0.2,"classifiedBy":"Classifier","classifiedAt":"2025-03-01T08:00:00Z"}', '', 'thread_old', ?, ?, 0)`,
		created.UnixNano(), created.UnixNano()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := open(t, path)
	it, err := s.GetInboxItem(t.Context(), "u1", "old-1")
	if err != nil {
		t.Fatal(err)
	}
	if it.AgentRun != nil || it.ClassificationMeta == nil || it.ClassificationMeta.Bucket != "Ideas" || it.UpstreamThreadID != "thread_old" {
		t.Fatalf("old item read back as %+v", it)
	}
	run := &brainwire.AgentRun{RunID: "run-2", AgentVersion: "3f2a9c1b04de", Outcome: brainwire.OutcomeClassified,
		Bucket: "Projects", Confidence: 0.8, TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"}
	refiled, err := s.File(t.Context(), brainwire.Filing{
		UserID: "u1", InboxItemID: "old-1", NewRecordID: "rec-1", RawText: "what about the thing\nthe website",
		Title: "Thing", Status: brainwire.StatusClassified, FollowUpRound: 1, AgentRun: run, Now: created.Add(time.Hour),
		Classification: brainwire.Classification{Bucket: "Projects", Confidence: 0.8, ClassifiedBy: "Classifier"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetInboxItem(t.Context(), "u1", "old-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.AgentRun == nil || *got.AgentRun != *run || refiled.AgentRun == nil || *refiled.AgentRun != *run {
		t.Errorf("agent run %+v (returned %+v), want %+v", got.AgentRun, refiled.AgentRun, run)
	}
	users, err := s.ListUsers(t.Context())
	if err != nil || !slices.Equal(users, []string{"u1"}) {
		t.Errorf("ListUsers = %v, %v", users, err)
	}
}

// TestOpenMigratesToTheUnresolvedStatus opens a file at schema version 4,
// whose inbox refused the unresolved status: its items and their bucket
// records come through the rebuild of both tables, which then take
// unresolved items, keep their indexes and still link records to items.
func TestOpenMigratesToTheUnresolvedStatus(t *testing.T) {
	path, db := oldFile(t, strings.Replace(schemaV2, "PRAGMA user_version = 2;", `ALTER TABLE inbox ADD COLUMN agent_run TEXT;
ALTER TABLE inbox ADD COLUMN follow_up_claim TEXT;
PRAGMA user_version = 4;`, 1))
	created := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	if _, err := db.Exec(`INSERT INTO inbox VALUES ('u1', 'old-1', 'call Anna', 'Anna', 'voice', 'classified',
		'{"bucket":"People","confidence":0.9,"classifiedBy":"Classifier","classifiedAt":"2025-03-01T08:00:00Z"}', 'rec-1', 'thread_old', ?, ?, 1,
		'{"runId":"run-1","outcome":"classified","bucket":"People","confidence":0.9}', NULL)`,
		created.UnixNano(), created.UnixNano()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO bucket_records VALUES ('u1', 'People', 'rec-1', 'call Anna', 'Anna',
		'{"bucket":"People","confidence":0.9,"classifiedBy":"Classifier","classifiedAt":"2025-03-01T08:00:00Z"}', 'old-1', ?)`,
		created.UnixNano()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := open(t, path)
	ctx := t.Context()
	it, err := s.GetInboxItem(ctx, "u1", "old-1")
	if err != nil {
		t.Fatal(err)
	}
	if it.Status != brainwire.StatusClassified || it.Source != brainwire.KindVoice || it.FollowUpRounds != 1 ||
		it.AgentRun == nil || it.AgentRun.RunID != "run-1" || !it.CreatedAt.Equal(created) {
		t.Errorf("old item read back as %+v", it)
	}
	if rec, err := s.GetBucketRecord(ctx, "u1", brainwire.BucketPeople, "rec-1"); err != nil || rec.InboxRecordID != "old-1" {
		t.Fatalf("the old item's record after the migration: %+v, %v", rec, err)
	}

	un, err := s.File(ctx, brainwire.Filing{UserID: "u1", NewInboxID: "new-1", RawText: "hmm", Source: brainwire.KindText,
		Status: brainwire.StatusUnresolved, Now: created.Add(time.Hour)})
	if err != nil {
		t.Fatalf("filing an unresolved capture after the migration: %v", err)
	}
	page, err := s.ListInbox(ctx, "u1", brainwire.ListOptions{Status: brainwire.StatusUnresolved})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != un.ID {
		t.Errorf("unresolved items: %+v, %v", page.Items, err)
	}
	// The record still belongs to its item: filing the item elsewhere
	// moves it rather than adding one.
	moved, err := s.Recategorize(ctx, "u1", "old-1", brainwire.BucketIdeas, "rec-2", "user", created.Add(2*time.Hour))
	if err != nil || moved.FiledRecordID != "rec-1" {
		t.Fatalf("Recategorize after the migration: %+v, %v", moved, err)
	}
	if err := s.DeleteInboxItem(ctx, "u1", "old-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBucketRecord(ctx, "u1", brainwire.BucketIdeas, "rec-1"); brainwire.ErrorCode(err) != brainwire.ENotFound {
		t.Errorf("record of the deleted item: %v, want it gone", err)
	}

	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var indexes, parent string
	if err := db.QueryRow(`SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'inbox' AND sql IS NOT NULL ORDER BY name)`).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if indexes != "inbox_by_created inbox_by_status" {
		t.Errorf("inbox indexes %q", indexes)
	}
	if err := db.QueryRow(`SELECT "table" FROM pragma_foreign_key_list('bucket_records')`).Scan(&parent); err != nil || parent != "inbox" {
		t.Errorf("bucket records refer to %q (%v), want inbox", parent, err)
	}
}

// TestOpenMigratesToShadowTrials opens a file at schema version 7, before
// items kept shadow trials: a read-only open refuses it (the reads select
// the trial's column), and a server's open migrates it, after which its
// items read back without a trial and take one.
func TestOpenMigratesToShadowTrials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "brainwire.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	f := filing("u1", 1)
	if _, err := s.File(t.Context(), f); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE inbox DROP COLUMN shadow; PRAGMA user_version = 7;`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if r, err := sqlite.OpenReadOnly(t.Context(), path); err == nil || !strings.Contains(err.Error(), "schema version 7") {
		t.Errorf("OpenReadOnly of a version 7 file: %v, want it refused", err)
		if r != nil {
			r.Close()
		}
	}
	s = open(t, path)
	ctx := t.Context()
	if it, err := s.GetInboxItem(ctx, "u1", f.NewInboxID); err != nil || it.Shadow != nil || it.RawText != f.RawText {
		t.Fatalf("old item after the migration: %+v, %v", it, err)
	}
	tr := brainwire.ShadowTrial{Candidate: brainwire.AgentRun{RunID: "shadow-1", Outcome: brainwire.OutcomeClassified}, At: f.Now}
	if err := s.RecordShadow(ctx, "u1", f.NewInboxID, tr); err != nil {
		t.Fatal(err)
	}
	if it, err := s.GetInboxItem(ctx, "u1", f.NewInboxID); err != nil || it.Shadow == nil || it.Shadow.Candidate.RunID != "shadow-1" {
		t.Fatalf("old item's trial: %+v, %v", it.Shadow, err)
	}
}
