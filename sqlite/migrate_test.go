package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
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

// TestOpenMigratesItemsWithoutAgentRuns opens a file written before items
// kept their agent run: its items read back without one, and take one when
// a follow-up refiles them.
func TestOpenMigratesItemsWithoutAgentRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "brainwire.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(schemaV2); err != nil {
		t.Fatal(err)
	}
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
	if it.AgentRun != nil || it.ClassificationMeta == nil || it.ClassificationMeta.Bucket != "Ideas" || it.FoundryThreadID != "thread_old" {
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
