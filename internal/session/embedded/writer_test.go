package embedded

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestBatchCommitsTogether: writes that queued together are made in one
// transaction, and each caller learns that its write is in.
func TestBatchCommitsTogether(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), session.Options{})
	ctx := context.Background()
	ids := []string{session.NewUUID(), session.NewUUID(), session.NewUUID()}
	var txs []*sql.Tx
	var jobs []*writeJob
	for _, id := range ids {
		jobs = append(jobs, &writeJob{ctx: ctx, done: make(chan error, 1), fn: func(tx *sql.Tx) error {
			txs = append(txs, tx)
			return s.extend(ctx, tx, id)
		}})
	}
	s.commit(jobs)
	for i, j := range jobs {
		if err := <-j.done; err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if len(txs) != 3 || txs[0] != txs[1] || txs[1] != txs[2] {
		t.Errorf("the batch ran in %d calls over distinct transactions, want 3 calls in one", len(txs))
	}
	for _, id := range ids {
		if !hasRow(t, s, id) {
			t.Errorf("session %s has no row after its write was acknowledged", id)
		}
	}
}

// TestBatchWithAFailingWrite: one write of a batch that fails (here, with
// an error of its caller's making) fails alone; the others of its batch
// are made, each in a transaction of its own, and none of the failed
// write's changes stays.
func TestBatchWithAFailingWrite(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), session.Options{})
	ctx := context.Background()
	good1, bad, good2 := session.NewUUID(), session.NewUUID(), session.NewUUID()
	refused := errors.New("refused")
	runs := map[string]int{}
	job := func(id string, fail bool) *writeJob {
		return &writeJob{ctx: ctx, done: make(chan error, 1), fn: func(tx *sql.Tx) error {
			runs[id]++
			if err := s.extend(ctx, tx, id); err != nil {
				return err
			}
			if fail {
				return badInput{refused}
			}
			return nil
		}}
	}
	jobs := []*writeJob{job(good1, false), job(bad, true), job(good2, false)}
	s.commit(jobs)
	if err := <-jobs[0].done; err != nil {
		t.Errorf("first write: %v", err)
	}
	var b badInput
	if err := <-jobs[1].done; !errors.As(err, &b) || !errors.Is(b.err, refused) {
		t.Errorf("failing write: %v, want its own error", err)
	}
	if err := <-jobs[2].done; err != nil {
		t.Errorf("last write: %v", err)
	}
	if !hasRow(t, s, good1) || !hasRow(t, s, good2) {
		t.Error("a good write of the batch is missing")
	}
	if hasRow(t, s, bad) {
		t.Error("the failed write's row stayed")
	}
	// The first write ran in the batch and again alone; the last one
	// never got its turn in the batch.
	if runs[good1] != 2 || runs[bad] != 2 || runs[good2] != 1 {
		t.Errorf("runs %v", runs)
	}
}

// TestBatchSkipsCancelledWrites: a write whose caller gave up while it
// queued is not made.
func TestBatchSkipsCancelledWrites(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), session.Options{})
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	j := &writeJob{ctx: gone, done: make(chan error, 1), fn: func(*sql.Tx) error { ran = true; return nil }}
	s.commit([]*writeJob{j})
	if err := <-j.done; !errors.Is(err, context.Canceled) || ran {
		t.Errorf("%v, ran %v", err, ran)
	}
}

// TestWritesAfterClose: a write after Close, or waiting when it
// happens, fails with the store closed rather than hanging.
func TestWritesAfterClose(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "sessions.db"), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := s.Touch(ctx, session.NewUUID(), session.Turn{Cwd: "/"}, time.Now())
			errs <- err
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, session.ErrUnavailable) {
			t.Errorf("a write racing Close: %v", err)
		}
	}
	if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/"}, time.Now()); !errors.Is(err, errClosed) {
		t.Errorf("a write after Close: %v, want %v", err, errClosed)
	}
}

func hasRow(t *testing.T, s *Store, id string) bool {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM sessions WHERE id = ?`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}
