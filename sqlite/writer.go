package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// writer runs the store's write transactions on its one write connection,
// committing those that queue up while a commit is under way together:
// group commit. With synchronous=FULL every commit is a sync of the WAL to
// disk, so one transaction per capture made the disk's sync rate the
// ceiling on captures filed per second, and sync the largest part of
// filing's CPU. Each transaction of a group runs in a savepoint of its own,
// so one that fails is undone alone; a transaction is reported done only
// once the group's commit has returned, so nothing reported filed is lost.
// Plain transactions on the one connection instead (brainwire-load -n 1000
// -telemetry, warm rounds, alternating): outcome p99 3.0–6.6 s against
// 1.5–2.7 s, CPU per capture 2.2–2.8 ms against 1.6–1.9 ms.
type writer struct {
	db *sql.DB
	// prepared holds statements that filing runs for every capture,
	// compiled once on the write connection; read-only after newWriter.
	prepared map[string]*sql.Stmt
	jobs     chan *writeJob
	stop     chan struct{}
	done     chan struct{}
	close    sync.Once

	groups atomic.Int64 // groups run, for tests
}

// maxGroup bounds a group, and so the wait of the last one in it.
const maxGroup = 128

var errClosed = errors.New("the store is closed")

// A writeJob is one caller's transaction.
type writeJob struct {
	ctx   context.Context
	fn    func(context.Context, writeTx) error
	state atomic.Int32 // jobQueued, then jobStarted or jobAbandoned
	err   error
	done  chan struct{}
}

const (
	jobQueued int32 = iota
	jobStarted
	jobAbandoned
)

// Statements every filing runs, prepared once (see writeTx).
const (
	savepointSQL  = "SAVEPOINT job"
	rollbackToSQL = "ROLLBACK TO job"
	releaseSQL    = "RELEASE job"
)

// newWriter prepares the statements in prepare on db's one connection and
// starts the writer. They must be prepared while no transaction holds the
// connection: preparing on the pool would wait for it.
func newWriter(ctx context.Context, db *sql.DB, prepare ...string) (*writer, error) {
	w := &writer{db: db, prepared: make(map[string]*sql.Stmt, len(prepare)),
		jobs: make(chan *writeJob, maxGroup), stop: make(chan struct{}), done: make(chan struct{})}
	for _, q := range prepare {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			w.closeStatements()
			return nil, fmt.Errorf("preparing %q: %w", q, err)
		}
		w.prepared[q] = st
	}
	go w.loop()
	return w, nil
}

// writeTx is a write transaction. Its ExecContext runs a statement that
// was prepared when the store opened from that preparation: compiling the
// statements anew for every capture filed was a sixth of filing's CPU.
// Any other statement is compiled as it runs.
type writeTx struct {
	*sql.Tx
	prepared map[string]*sql.Stmt
}

func (t writeTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := t.prepared[query]; ok {
		// The transaction's connection is the one st was prepared on
		// (the writer has one), so this reuses the compiled statement.
		return t.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (w *writer) closeStatements() {
	for _, st := range w.prepared {
		_ = st.Close()
	}
}

// run runs fn in a write transaction and returns once it is committed
// or has failed. fn gets a context that is not cancelled: once begun, a
// transaction runs to its end (interrupting a statement would roll back
// the whole group's transaction). A caller whose ctx ends while its
// transaction is still queued gets ctx's error, and the transaction does
// not run.
func (w *writer) run(ctx context.Context, fn func(context.Context, writeTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &writeJob{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case w.jobs <- j:
	case <-w.stop:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-j.done:
		return j.err
	case <-w.done:
		// The writer has stopped; it may have answered this one last.
		select {
		case <-j.done:
			return j.err
		default:
			return errClosed
		}
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return ctx.Err()
		}
		<-j.done // begun: its outcome is the caller's to know
		return j.err
	}
}

func (w *writer) loop() {
	defer close(w.done)
	group := make([]*writeJob, 0, maxGroup)
	for {
		select {
		case j := <-w.jobs:
			w.commit(w.fill(append(group[:0], j)))
		case <-w.stop:
			// Transactions that got in before the stop still run.
			for g := w.fill(group[:0]); len(g) > 0; g = w.fill(group[:0]) {
				w.commit(g)
			}
			return
		}
	}
}

// fill adds to group the transactions already waiting, up to maxGroup.
func (w *writer) fill(group []*writeJob) []*writeJob {
	for len(group) < maxGroup {
		select {
		case j := <-w.jobs:
			group = append(group, j)
		default:
			return group
		}
	}
	return group
}

// commit runs a group's transactions in one database transaction.
func (w *writer) commit(group []*writeJob) {
	var run []*writeJob
	for _, j := range group {
		if j.state.CompareAndSwap(jobQueued, jobStarted) {
			run = append(run, j)
		} else {
			close(j.done) // abandoned: its caller has gone
		}
	}
	if len(run) == 0 {
		return
	}
	w.groups.Add(1)
	defer func() {
		for _, j := range run {
			close(j.done)
		}
	}()
	fail := func(err error) {
		for _, j := range run {
			if j.err == nil {
				j.err = err
			}
		}
	}
	// The transaction outlives any one caller's context.
	sqlTx, err := w.db.BeginTx(context.Background(), nil)
	if err != nil {
		fail(fmt.Errorf("beginning transaction: %w", err))
		return
	}
	tx := writeTx{Tx: sqlTx, prepared: w.prepared}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback()
		}
	}()
	if len(run) == 1 {
		j := run[0]
		if j.err = j.fn(context.WithoutCancel(j.ctx), tx); j.err != nil {
			return
		}
	} else {
		ok := 0
		for _, j := range run {
			if err := j.inSavepoint(tx); err != nil {
				// The savepoint could not be undone: the transaction is
				// in no state to commit.
				fail(err)
				return
			}
			if j.err == nil {
				ok++
			}
		}
		if ok == 0 {
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("committing: %w", err))
		return
	}
	committed = true
}

// inSavepoint runs the job in a savepoint, undone if the job fails. The
// job's own error is in j.err; the error returned is the savepoint's.
func (j *writeJob) inSavepoint(tx writeTx) error {
	ctx := context.WithoutCancel(j.ctx)
	if _, err := tx.ExecContext(ctx, savepointSQL); err != nil {
		return fmt.Errorf("opening savepoint: %w", err)
	}
	if j.err = j.fn(ctx, tx); j.err != nil {
		if _, err := tx.ExecContext(ctx, rollbackToSQL); err != nil {
			return fmt.Errorf("undoing a failed write: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, releaseSQL); err != nil {
		return fmt.Errorf("releasing savepoint: %w", err)
	}
	return nil
}

// shutdown stops taking transactions once those queued have their answer.
func (w *writer) shutdown() {
	w.close.Do(func() { close(w.stop) })
	<-w.done
	w.closeStatements()
}
