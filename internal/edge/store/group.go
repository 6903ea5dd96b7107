package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// groupCommitter coalesces the single-row writes of concurrent callers into one transaction on SQLite's single
// writer connection (group commit). A wave starts and ends with hundreds of apps recording an intent, a
// trigger or an outcome at once; one statement per transaction pays a commit (a WAL append, lock hand-offs,
// the pool's connection hand-off) for each of them, and the writes queue behind each other on the critical
// path of the wave. Batched, each caller still returns only after its own write is committed, so "intent
// written before the side effect" holds exactly as before; a write that fails (no row matched, a constraint)
// fails alone — SQLite rolls back the statement, not the transaction — and a failed commit fails every write
// of the batch.
//
// The batch is whatever queued while the previous one ran: one lone write commits at once, with no added
// delay.
type groupCommitter struct {
	db    *sql.DB
	prep  func(ctx context.Context, query string) (*sql.Stmt, error)
	queue chan *groupWrite
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// maxGroup bounds the writes of one transaction.
const maxGroup = 256

// groupWrite is one caller's statement; scan reads its row inside the batch's transaction.
type groupWrite struct {
	query string
	args  []any
	scan  func(*sql.Row) error
	// state: 0 queued, 1 taken by the committer, 2 abandoned by its caller before it was taken.
	state atomic.Int32
	err   error
	done  chan struct{}
}

var errStoreClosed = errors.New("store closed")

func newGroupCommitter(db *sql.DB, prep func(ctx context.Context, query string) (*sql.Stmt, error)) *groupCommitter {
	g := &groupCommitter{db: db, prep: prep, queue: make(chan *groupWrite, maxGroup), quit: make(chan struct{}),
		done: make(chan struct{})}
	go g.loop()
	return g
}

// write runs query (a single-row statement, e.g. UPDATE ... RETURNING) in the next batch and scans its row. It
// returns once the batch is committed. When ctx ends before the write was taken into a batch, it is dropped
// and ctx's error returned; once taken, the caller waits for the commit (a write is never left in doubt).
func (g *groupCommitter) write(ctx context.Context, query string, args []any, scan func(*sql.Row) error) error {
	w := &groupWrite{query: query, args: args, scan: scan, done: make(chan struct{})}
	select {
	case g.queue <- w:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.quit:
		return errStoreClosed
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		if w.state.CompareAndSwap(0, 2) {
			return ctx.Err()
		}
		<-w.done
		return w.err
	}
}

func (g *groupCommitter) loop() {
	defer close(g.done)
	for {
		var first *groupWrite
		select {
		case first = <-g.queue:
		case <-g.quit:
			g.failQueued()
			return
		}
		batch := []*groupWrite{first}
	more:
		for len(batch) < maxGroup {
			select {
			case w := <-g.queue:
				batch = append(batch, w)
			default:
				break more
			}
		}
		g.commit(batch)
	}
}

// commit runs the batch's writes that their callers still wait for in one transaction.
func (g *groupCommitter) commit(batch []*groupWrite) {
	live := batch[:0]
	for _, w := range batch {
		if w.state.CompareAndSwap(0, 1) {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		return
	}
	defer func() {
		for _, w := range live {
			close(w.done)
		}
	}()
	ctx := context.Background() // the batch belongs to every caller: none of their contexts may cut it short
	// Statements are prepared before the transaction takes the writer's only connection.
	stmts := make([]*sql.Stmt, len(live))
	for i, w := range live {
		stmts[i], w.err = g.prep(ctx, w.query)
	}
	if len(live) == 1 {
		// Alone: its own statement is its transaction (an explicit one would cost a BEGIN and a COMMIT more).
		if w := live[0]; w.err == nil {
			w.err = w.scan(stmts[0].QueryRowContext(ctx, w.args...))
		}
		return
	}
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		for _, w := range live {
			w.err = fmt.Errorf("beginning a write transaction: %w", err)
		}
		return
	}
	for i, w := range live {
		if w.err == nil {
			w.err = w.scan(tx.StmtContext(ctx, stmts[i]).QueryRowContext(ctx, w.args...))
		}
	}
	if err := tx.Commit(); err != nil {
		for _, w := range live {
			w.err = fmt.Errorf("committing a write transaction: %w", err)
		}
	}
}

// failQueued fails the writes still queued when the store closes.
func (g *groupCommitter) failQueued() {
	for {
		select {
		case w := <-g.queue:
			if w.state.CompareAndSwap(0, 1) {
				w.err = errStoreClosed
			}
			close(w.done)
		default:
			return
		}
	}
}

// close stops the committer after the batch in progress; writes still queued fail.
func (g *groupCommitter) close() {
	g.once.Do(func() { close(g.quit) })
	<-g.done
}
