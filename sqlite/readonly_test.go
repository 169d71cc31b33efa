package sqlite_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainwire/brainwire"
	"github.com/brainwire/brainwire/sqlite"
)

// TestOpenReadOnlyCreatesNothing: a missing directory or file is an
// error, and neither is created.
func TestOpenReadOnlyCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "data", "brainwire.db"), filepath.Join(dir, "brainwire.db")} {
		s, err := sqlite.OpenReadOnly(t.Context(), path)
		if code := brainwire.ErrorCode(err); code != brainwire.ENotFound || !strings.Contains(err.Error(), path) {
			t.Errorf("OpenReadOnly(%s) = %v, code %q; want %s naming the path", path, err, code, brainwire.ENotFound)
		}
		if s != nil {
			s.Close()
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("OpenReadOnly created %v", entries)
	}
	if _, err := sqlite.OpenReadOnly(t.Context(), dir); brainwire.ErrorCode(err) != brainwire.EInvalid {
		t.Errorf("OpenReadOnly(a directory) = %v, want %s", err, brainwire.EInvalid)
	}
}

// TestOpenReadOnlyReadsAndNeverWrites reads what a server wrote, while it
// runs and after, and refuses every write without touching the database.
func TestOpenReadOnlyReadsAndNeverWrites(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "brainwire.db")
	w := open(t, path)
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	if _, err := w.File(ctx, brainwire.Filing{UserID: "u1", NewInboxID: "in-1", NewRecordID: "rec-1", RawText: "Call Anna",
		Source: brainwire.KindText, Status: brainwire.StatusClassified, Now: now,
		Classification: brainwire.Classification{Bucket: brainwire.BucketPeople, Confidence: 0.9}}); err != nil {
		t.Fatal(err)
	}

	r, err := sqlite.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if it, err := r.GetInboxItem(ctx, "u1", "in-1"); err != nil || it.RawText != "Call Anna" {
		t.Fatalf("reading while the server runs: %+v, %v", it, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	before := dirState(t, filepath.Dir(path))
	r, err = sqlite.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	page, err := r.ListInbox(ctx, "u1", brainwire.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("ListInbox: %+v, %v", page.Items, err)
	}
	if users, err := r.ListUsers(ctx); err != nil || !slices.Equal(users, []string{"u1"}) {
		t.Fatalf("ListUsers = %v, %v", users, err)
	}
	if err := r.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	writes := map[string]error{
		"File": func() error {
			_, err := r.File(ctx, brainwire.Filing{UserID: "u1", NewInboxID: "in-2", RawText: "x", Source: brainwire.KindText,
				Status: brainwire.StatusUnresolved, Now: now})
			return err
		}(),
		"Recategorize": func() error {
			_, err := r.Recategorize(ctx, "u1", "in-1", brainwire.BucketIdeas, "rec-2", "user", now)
			return err
		}(),
		"DeleteInboxItem": r.DeleteInboxItem(ctx, "u1", "in-1"),
		"ReleaseFollowUp": r.ReleaseFollowUp(ctx, "u1", "in-1", "token"),
	}
	for name, err := range writes {
		if err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s on a read-only store: %v", name, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dirState(t, filepath.Dir(path)); !slices.Equal(after, before) {
		t.Errorf("the data directory changed:\n%v\nwas\n%v", after, before)
	}
}

// dirState lists a directory's files with their sizes, times and a hash
// of their bytes, leaving out SQLite's empty WAL companions: a reader of a
// WAL database no server holds open makes them, as every SQLite reader
// does, and cannot remove them.
func dirState(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), "-shm") || strings.HasSuffix(e.Name(), "-wal") && fi.Size() == 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %v %x", e.Name(), fi.Size(), fi.ModTime(), sha256.Sum256(b)))
	}
	return out
}

// TestOpenReadOnlyRefusesUnknownSchemas: a file too old for the reads (a
// server would migrate it) or newer than this program is refused; Open
// refuses the newer one too, lest it misread it.
func TestOpenReadOnlyRefusesUnknownSchemas(t *testing.T) {
	for name, schema := range map[string]string{
		"old":   schemaV2,
		"newer": "CREATE TABLE x (a INTEGER); PRAGMA user_version = 99;",
	} {
		path, db := oldFile(t, schema)
		db.Close()
		s, err := sqlite.OpenReadOnly(t.Context(), path)
		if err == nil || !strings.Contains(err.Error(), "schema version") {
			t.Errorf("%s schema: %v, want it refused", name, err)
		}
		if s != nil {
			s.Close()
		}
		if name == "newer" {
			if s, err := sqlite.Open(t.Context(), path); err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
				t.Errorf("Open of a newer schema: %v", err)
				if s != nil {
					s.Close()
				}
			}
		}
	}
}
