// Package sqlite is the embedded brainwire.Store: one SQLite file, written
// through modernc.org/sqlite (pure Go, no cgo). It is the default store on a
// fresh machine and the one tests use.
//
// Inbox items and bucket records live in two tables; a record's bucket is a
// column, and its classification is stored as the same JSON document the
// Cosmos DB containers hold. Every write is one transaction.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/brainwire/brainwire"
)

// busyTimeoutMillis bounds how long a connection waits for a lock held by
// another process (or another Store) on the same file before SQLITE_BUSY.
const busyTimeoutMillis = 10_000

// Store is a brainwire.Store on a SQLite file. It is safe for concurrent use.
type Store struct {
	// write has a single connection: SQLite allows one writer at a time, and
	// queueing writers in the process (writer, which honours contexts)
	// instead of on file locks means concurrent captures never see
	// SQLITE_BUSY.
	write *sql.DB
	// writer runs every write transaction on write, in groups.
	writer *writer
	// read serves lookups and lists; in WAL mode readers neither block the
	// writer nor wait for it.
	read *sql.DB
}

var (
	_ brainwire.Store       = (*Store)(nil)
	_ brainwire.ShadowStore = (*Store)(nil)
)

// Open opens the store at path, creating the file and its parent directory
// if needed and bringing the schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	abs, err := absPath(path)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: creating the database directory: %w", err)
	}

	write, err := sql.Open("sqlite", dsn(abs, true))
	if err != nil {
		return nil, fmt.Errorf("sqlite: opening %s: %w", abs, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	// The first connection switches the file to WAL, so the schema is in
	// place and the journal mode settled before any reader connects.
	if err := migrate(ctx, write); err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: opening %s: %w", abs, err)
	}

	read, err := sql.Open("sqlite", dsn(abs, false))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: opening %s for reading: %w", abs, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	if err := read.PingContext(ctx); err != nil {
		read.Close()
		write.Close()
		return nil, fmt.Errorf("sqlite: opening %s for reading: %w", abs, err)
	}
	// A new capture's filing is these statements, and it is what the
	// writer runs most.
	w, err := newWriter(ctx, write, savepointSQL, rollbackToSQL, releaseSQL, insertItemSQL, insertRecordSQL)
	if err != nil {
		read.Close()
		write.Close()
		return nil, fmt.Errorf("sqlite: opening %s: %w", abs, err)
	}
	return &Store{write: write, writer: w, read: read}, nil
}

// absPath is the absolute path of the database file at path.
func absPath(path string) (string, error) {
	if path == "" {
		return "", brainwire.Errorf(brainwire.EInvalid, "sqlite: no database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sqlite: resolving %s: %w", path, err)
	}
	return abs, nil
}

// readableFrom is the oldest schema version whose tables have every column
// the reads select (the shadow trial's is the newest): OpenReadOnly
// migrates nothing.
const readableFrom = 8

// OpenReadOnly opens the existing store at path for reading only, for
// tools that must not change what they read (brainwire export-labels): it
// creates nothing, neither directory nor file nor schema, and migrates
// nothing. A missing file is ENotFound; a file whose schema the reads do
// not know is refused. Every write fails.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	abs, err := absPath(path)
	if err != nil {
		return nil, err
	}
	// SQLite would create a missing file, read-only or not.
	switch fi, err := os.Stat(abs); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, brainwire.Errorf(brainwire.ENotFound, "sqlite: no database at %s", abs)
	case err != nil:
		return nil, fmt.Errorf("sqlite: opening %s: %w", abs, err)
	case !fi.Mode().IsRegular():
		return nil, brainwire.Errorf(brainwire.EInvalid, "sqlite: %s is not a database file", abs)
	}
	read, err := sql.Open("sqlite", readOnlyDSN(abs))
	if err != nil {
		return nil, fmt.Errorf("sqlite: opening %s: %w", abs, err)
	}
	var v int
	if err := read.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		read.Close()
		return nil, fmt.Errorf("sqlite: opening %s: %w", abs, err)
	}
	if v < readableFrom || v > len(migrations) {
		read.Close()
		return nil, fmt.Errorf("sqlite: %s is at schema version %d; this program reads versions %d to %d (brainwire serve brings an older file up to date)",
			abs, v, readableFrom, len(migrations))
	}
	return &Store{read: read}, nil
}

// errReadOnly is every write's error on a store opened with OpenReadOnly.
var errReadOnly = errors.New("the store was opened read-only")

// dsn returns the driver's connection string for the file at abs. Writers
// take the write lock when their transaction begins (BEGIN IMMEDIATE): a
// transaction that reads first and upgrades later could fail with
// SQLITE_BUSY without waiting. Readers are made query-only.
func dsn(abs string, writer bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeoutMillis))
	q.Set("_foreign_keys", "on")
	if writer {
		q.Set("_journal_mode", "WAL")
		q.Set("_synchronous", "FULL") // a capture the phone saw filed survives power loss
		q.Set("_txlock", "immediate")
		// A group's savepoints journal the pages they change; past a
		// few dozen KiB SQLite moves that journal to a temporary file,
		// which cost a group an open and its writes.
		q.Set("_pragma", "temp_store(memory)")
	} else {
		q.Set("_query_only", "on")
	}
	return fileURI(abs, q)
}

// readOnlyDSN is the connection string of a reader that may not write
// the file at abs (mode=ro), whatever the file's permissions.
func readOnlyDSN(abs string) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeoutMillis))
	q.Set("mode", "ro")
	q.Set("_query_only", "on")
	return fileURI(abs, q)
}

func fileURI(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", OmitHost: true, Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Ping checks that the database file can be read.
func (s *Store) Ping(ctx context.Context) error {
	var v int
	if err := s.read.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	return nil
}

// wrapErr prefixes a non-nil *errp with the package and what was being done.
// Errors keep their chain, so brainwire.ErrorCode still finds the code.
func wrapErr(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = fmt.Errorf("sqlite: %s: %w", fmt.Sprintf(format, args...), *errp)
	}
}

// Close closes the database. Calls in flight finish first.
func (s *Store) Close() error {
	var werr error
	if s.writer != nil { // nil when read-only
		s.writer.shutdown()
		werr = s.write.Close()
	}
	if err := errors.Join(s.read.Close(), werr); err != nil {
		return fmt.Errorf("sqlite: closing: %w", err)
	}
	return nil
}

// inTx runs fn in a write transaction and commits it if fn succeeds (see
// writer: transactions queued together commit together). fn's statements
// use the context it is given.
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx writeTx) error) error {
	if s.writer == nil {
		return errReadOnly
	}
	return s.writer.run(ctx, fn)
}

// isConflict reports whether err is a primary key or unique violation.
func isConflict(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		return true
	}
	return false
}

// Kind names the backend in health reports.
func (s *Store) Kind() string { return "sqlite" }
