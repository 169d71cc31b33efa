package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// scratch opens a store with a table of its own for the writer's tests.
func scratch(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.write.ExecContext(t.Context(), `CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	return s
}

func insert(k string) func(context.Context, writeTx) error {
	return func(ctx context.Context, tx writeTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t (k, v) VALUES (?, 'v')`, k)
		return err
	}
}

func keys(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	rows, err := s.read.QueryContext(t.Context(), `SELECT k FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got[k] = true
	}
	return got
}

// hold queues a transaction that keeps the writer busy until release is
// closed, so that the transactions queued meanwhile make one group.
func hold(t *testing.T, s *Store) (release func(), wait func()) {
	t.Helper()
	ch, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.inTx(t.Context(), func(ctx context.Context, tx writeTx) error {
			close(started)
			<-ch
			return insert("held")(ctx, tx)
		}); err != nil {
			t.Errorf("held transaction: %v", err)
		}
	})
	<-started
	return func() { close(ch) }, wg.Wait
}

// queued waits until n transactions wait for the writer.
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.writer.jobs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions queued, want %d", len(s.writer.jobs), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWriterGroupsAndIsolatesFailures: transactions that queue up while
// one runs commit together, and one of them that fails is undone alone,
// the rows it wrote before failing included.
func TestWriterGroupsAndIsolatesFailures(t *testing.T) {
	s := scratch(t)
	release, wait := hold(t, s)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			fn := insert(fmt.Sprint(i))
			if i%5 == 3 {
				fn = func(ctx context.Context, tx writeTx) error {
					if err := insert(fmt.Sprint(i))(ctx, tx); err != nil {
						return err
					}
					return insert("0")(ctx, tx) // a duplicate key: fails
				}
			}
			errs[i] = s.inTx(t.Context(), fn)
		})
		queued(t, s, i+1) // in order, so "0" goes first
	}
	before := s.writer.groups.Load() // the held group included
	release()
	wg.Wait()
	wait()
	if g := s.writer.groups.Load() - before; g != 1 {
		t.Errorf("the %d queued transactions ran in %d groups, want 1", n, g)
	}
	got := keys(t, s)
	for i := range n {
		k := fmt.Sprint(i)
		if i%5 == 3 {
			if errs[i] == nil || !isConflict(errs[i]) {
				t.Errorf("transaction %d: %v, want a conflict", i, errs[i])
			}
			if got[k] {
				t.Errorf("row %s of the failed transaction was kept", k)
			}
			continue
		}
		if errs[i] != nil || !got[k] {
			t.Errorf("transaction %d: %v, row kept %v", i, errs[i], got[k])
		}
	}
	if !got["held"] {
		t.Error("the held transaction's row is missing")
	}
}

// TestWriterCancelledWhileQueued: a caller that gives up before its
// transaction began gets its context's error and the transaction never
// runs; one that gives up after it began gets its outcome.
func TestWriterCancelledWhileQueued(t *testing.T) {
	s := scratch(t)
	release, wait := hold(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.inTx(ctx, insert("gave up")) }()
	queued(t, s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while queued: %v", err)
	}
	release()
	wait()

	ctx, cancel = context.WithCancel(t.Context())
	err := s.inTx(ctx, func(c context.Context, tx writeTx) error {
		cancel()
		if c.Err() != nil {
			return fmt.Errorf("the transaction's context was cancelled with the caller's")
		}
		return insert("begun")(c, tx)
	})
	if err != nil {
		t.Errorf("cancelled after it began: %v", err)
	}
	got := keys(t, s)
	if got["gave up"] || !got["begun"] {
		t.Errorf("rows %v: want \"begun\" and not \"gave up\"", got)
	}
}

// TestWriterClose: transactions queued when the store closes still
// commit; later ones are refused.
func TestWriterClose(t *testing.T) {
	s := scratch(t)
	release, wait := hold(t, s)
	done := make(chan error, 1)
	go func() { done <- s.inTx(t.Context(), insert("queued")) }()
	queued(t, s, 1)
	closed := make(chan struct{})
	go func() {
		s.writer.shutdown()
		close(closed)
	}()
	time.Sleep(20 * time.Millisecond) // let the stop arrive while the writer is busy
	release()
	wait()
	<-closed
	if err := <-done; err != nil {
		t.Errorf("transaction queued before the close: %v", err)
	}
	if err := s.inTx(t.Context(), insert("late")); !errors.Is(err, errClosed) {
		t.Errorf("transaction after the close: %v, want %v", err, errClosed)
	}
	if got := keys(t, s); !got["queued"] || got["late"] {
		t.Errorf("rows %v", got)
	}
}

// A group's savepoints keep the pages they change in a statement journal;
// on disk, every group grew a temporary file and paid its writes.
func TestWriterKeepsTemporaryDataInMemory(t *testing.T) {
	s := scratch(t)
	var store int
	if err := s.inTx(t.Context(), func(ctx context.Context, tx writeTx) error {
		return tx.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&store)
	}); err != nil {
		t.Fatal(err)
	}
	if store != 2 { // MEMORY
		t.Errorf("temp_store = %d on the write connection, want 2 (memory)", store)
	}
}
