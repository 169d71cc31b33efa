package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/sqlite"
	"github.com/brainwire/brainwire/storetest"
)

func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) brainwire.Store {
		return open(t, filepath.Join(t.TempDir(), "brainwire.db"))
	})
}

func filing(user string, i int) brainwire.Filing {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	return brainwire.Filing{
		UserID:      user,
		NewInboxID:  uuid.NewString(),
		NewRecordID: uuid.NewString(),
		RawText:     fmt.Sprintf("capture %d", i),
		Title:       fmt.Sprintf("Capture %d", i),
		Source:      brainwire.KindText,
		Status:      brainwire.StatusClassified,
		Classification: brainwire.Classification{
			Bucket:       brainwire.Buckets[i%len(brainwire.Buckets)],
			Confidence:   0.9,
			AllScores:    map[string]float64{brainwire.BucketPeople: 0.9},
			ClassifiedBy: "Classifier",
			ClassifiedAt: now,
		},
		UpstreamThreadID: "thread_" + uuid.NewString(),
		Now:              now,
	}
}

// What a store filed reads back the same from the file reopened.
func TestReopen(t *testing.T) {
	// A space and a '#' in the path, and a parent directory to create.
	path := filepath.Join(t.TempDir(), "data dir", "nested#1", "brainwire.db")
	ctx := t.Context()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	item, err := s.File(ctx, filing("u1", 1))
	if err != nil {
		t.Fatalf("File: %v", err)
	}
	bucket := item.ClassificationMeta.Bucket
	rec, err := s.GetBucketRecord(ctx, "u1", bucket, item.FiledRecordID)
	if err != nil {
		t.Fatalf("GetBucketRecord: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t, path)
	if got, err := s.GetInboxItem(ctx, "u1", item.ID); err != nil || !reflect.DeepEqual(got, item) {
		t.Errorf("after reopening: %+v, %v\nwant %+v", got, err, item)
	}
	if got, err := s.GetBucketRecord(ctx, "u1", bucket, rec.ID); err != nil || !reflect.DeepEqual(got, rec) {
		t.Errorf("record after reopening: %+v, %v\nwant %+v", got, err, rec)
	}
}

func TestJournalModeIsWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "brainwire.db")
	open(t, path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

func TestOpenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "brainwire.db")); err == nil {
		s.Close()
		t.Fatal("Open with a cancelled context succeeded")
	}
}

// Two stores on one file are two processes.
func TestReplicas(t *testing.T) {
	storetest.RunReplicas(t, func(t *testing.T) (a, b brainwire.Store) {
		path := filepath.Join(t.TempDir(), "brainwire.db")
		return open(t, path), open(t, path)
	})
}
