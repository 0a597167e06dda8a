package embedded

import (
	"context"
	"database/sql"
	"errors"
)

// writeJob is one write of a caller, waiting for the writer.
type writeJob struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) error
	done chan error // buffered: the writer never waits for the caller
}

// maxBatch bounds the writes committed together.
const maxBatch = 32

// write runs fn in a write transaction, serialised with this process's
// other writes, and returns once that transaction has committed (or
// failed). fn may run more than once (see writer), each time on a
// database as it was before its earlier run.
func (s *Store) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	j := &writeJob{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case s.jobs <- j:
	case <-s.writerGone:
		return errClosed
	}
	err := <-j.done
	if err == nil {
		return nil
	}
	var bad badInput
	if errors.As(err, &bad) {
		return bad.err
	}
	return s.dbErr(ctx, what, err)
}

// writer makes the writes of this process, one goroutine for all of them.
// Writes that queued while it was busy are committed together, in one
// transaction, in the order they came: a commit (and its pages appended
// to the WAL) costs about as much as the writes of a turn, so many
// callers at once pay for fewer of them. If any write of such a batch
// fails, the batch is rolled back and its writes are made again one
// transaction each, so that one caller's failure is nobody else's. It
// also keeps the stack that SQLite's calls need grown, where each
// request's new goroutine would grow its own.
func (s *Store) writer() {
	defer close(s.writerGone)
	batch := make([]*writeJob, 0, maxBatch)
	for {
		select {
		case j := <-s.jobs:
			batch = append(batch[:0], j)
		case <-s.stopWriter:
			return
		}
	more:
		for len(batch) < maxBatch {
			select {
			case j := <-s.jobs:
				batch = append(batch, j)
			default:
				break more
			}
		}
		s.commit(batch)
		clear(batch)
	}
}

// commit makes the writes of batch and tells each caller how its write
// went.
func (s *Store) commit(batch []*writeJob) {
	live := batch[:0]
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.done <- err
			continue
		}
		live = append(live, j)
	}
	if len(live) > 1 {
		if err := s.transaction(context.Background(), live...); err == nil {
			for _, j := range live {
				j.done <- nil
			}
			return
		}
	}
	for _, j := range live {
		j.done <- s.transaction(j.ctx, j)
	}
}

// transaction runs the jobs' functions in one transaction and commits it.
func (s *Store) transaction(ctx context.Context, jobs ...*writeJob) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if err := j.fn(tx); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// stop ends the writer once it has made the writes it has taken; later
// writes fail with errClosed.
func (s *Store) stop() {
	close(s.stopWriter)
	<-s.writerGone
}

// badInput marks an error of the caller's making inside a transaction,
// which write returns as it is.
type badInput struct{ err error }

func (b badInput) Error() string { return b.err.Error() }
