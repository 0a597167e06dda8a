// Package embedded is the default session store: one SQLite database file
// in the state directory, through the pure-Go modernc.org/sqlite (no cgo),
// in WAL mode. It needs no server, and several server processes on one
// host may share the file: SQLite's file locks serialise their writes,
// and readers never wait for writers.
//
// Crash safety: every write is committed before the call returns (writes
// that queue together share a transaction; see writer). With
// synchronous=NORMAL in WAL mode a commit is in the operating system's
// hands when it returns, so a process killed at any moment (kill -9)
// loses no acknowledged write and leaves no half-written row; a power cut
// or a kernel crash may lose the last commits (never the database).
// Syncing every commit would cost an fsync per turn.
//
// Retention: each session row carries expires_at; reads ignore expired
// rows, and a background goroutine deletes them (and their turns and
// answers) periodically and at Open.
package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Store is a session.Store in one SQLite file.
type Store struct {
	path string
	db   *sql.DB
	st   stmts
	opts session.Options

	// jobs carries this process's writes to the one goroutine that makes
	// them (writer), so that they queue here rather than in SQLite's busy
	// handler, which sleeps and polls. Other processes still contend
	// through the file lock, which busy_timeout waits for.
	jobs       chan *writeJob
	stopWriter chan struct{} // closed by Close after its last write
	writerGone chan struct{} // closed by writer when it has stopped

	mu     sync.Mutex
	local  map[string]*localLease // per session: this process's queue for its lease
	held   map[string]string      // session id → holder token of the leases held here
	closed bool

	// jobWake wakes the waiters of a job this process changed (jobs.go).
	jobWake jobs.Notifier

	closing chan struct{} // closed by Close: stops the background work and waiting Leases
	bg      sync.WaitGroup
	once    sync.Once
}

var _ session.Store = (*Store)(nil)

// driverName is the database/sql driver of the store; tests put one in
// front of it that counts the SQL it compiles.
var driverName = "sqlite"

// busyTimeout is how long a write waits for another process's write
// transaction before failing. Ours last milliseconds.
const busyTimeout = 5 * time.Second

// Open opens (creating, private to the user) the store in the SQLite file
// at path. On a new database it imports the records and turns of the
// earlier file store found in path's directory (see importLegacy).
func Open(path string, opts session.Options) (*Store, error) {
	abs, err := Prepare(path)
	if err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	db, err := sql.Open(driverName, dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("session store %s: %w: %w", abs, session.ErrUnavailable, err)
	}
	s := &Store{
		path: abs, db: db, opts: opts,
		local: map[string]*localLease{}, held: map[string]string{},
		closing: make(chan struct{}),
		jobs:    make(chan *writeJob), stopWriter: make(chan struct{}), writerGone: make(chan struct{}),
	}
	go s.writer()
	ctx, cancel := context.WithTimeout(context.Background(), 2*busyTimeout)
	defer cancel()
	if err := s.init(ctx); err != nil {
		s.stop()
		db.Close()
		return nil, err
	}
	if err := s.st.prepare(ctx, db); err != nil {
		s.stop()
		db.Close()
		return nil, s.fail("preparing statements", err)
	}
	s.bg.Add(1)
	go s.background()
	return s, nil
}

// Prepare is the part of Open that costs next to nothing and finds most
// mistakes of configuration: it makes path's directory (private to the
// user) and creates the file, private, if it is missing, and returns the
// absolute path. Open starts with it; a server calls it before it serves
// and leaves Open (SQLite's open, the schema, the clean-up) to the
// background (session.Opening).
func Prepare(path string) (string, error) {
	if path == "" {
		return "", errors.New("session store: no database file given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("session store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return "", fmt.Errorf("session store: %w: %w", session.ErrUnavailable, err)
	}
	// SQLite creates the WAL and shared-memory files with the database
	// file's mode, so creating it private first keeps all three private.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("session store: %w: %w", session.ErrUnavailable, err)
	}
	f.Close()
	return abs, nil
}

// dsn is the modernc.org/sqlite data source name of the file at path: WAL
// (readers and writers of several processes side by side), a busy
// timeout (a writer waits for another's commit instead of failing),
// synchronous NORMAL (see the package comment), and BEGIN IMMEDIATE for
// transactions, so that a transaction that reads before it writes takes
// the write lock first and cannot fail half-way on another process's
// write.
func dsn(path string) string {
	// The path is part of a URI: escape what would end it early.
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))
	return "file:" + p + fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate",
		busyTimeout.Milliseconds())
}

func (s *Store) init(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return s.fail("creating the tables", err)
	}
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return s.fail("reading the journal mode", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("session store %s: %w: the database is in journal mode %q, not WAL (is it on a network file system?)", s.path, session.ErrUnavailable, mode)
	}
	if err := s.importLegacy(ctx); err != nil {
		return err
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	return s.expire(ctx)
}

// fail wraps an error of the database in session.ErrUnavailable.
func (s *Store) fail(what string, err error) error {
	return fmt.Errorf("session store %s: %s: %w: %w", s.path, what, session.ErrUnavailable, err)
}

// dbErr is fail for the calls of a caller: a call cancelled or past its
// deadline reports that, not an unavailable store.
func (s *Store) dbErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("session store: %s: %w", what, ctx.Err())
	}
	return s.fail(what, err)
}

// checkID accepts the lower-case UUIDs sessions and answers are named by.
func checkID(id string) error {
	if !session.IsUUID(id) || strings.ToLower(id) != id {
		return fmt.Errorf("session store: invalid id %q: want a lower-case UUID", clip(id))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// Close stops the background work, gives back the leases held here and
// closes the database. Later calls fail; a second Close does nothing.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		held := s.held
		s.held = map[string]string{}
		s.mu.Unlock()
		close(s.closing)
		s.bg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*busyTimeout)
		defer cancel()
		for id, holder := range held {
			if e := s.deleteLease(ctx, id, holder); e != nil {
				err = errors.Join(err, e)
			}
		}
		s.stop()
		// The statements go after the last use of the database, before it.
		if e := s.st.close(); e != nil {
			err = errors.Join(err, s.fail("closing", e))
		}
		if e := s.db.Close(); e != nil {
			err = errors.Join(err, s.fail("closing", e))
		}
	})
	return err
}

// background renews the leases held here every LeaseTTL/3 and deletes
// expired sessions every cleanupEvery, until Close.
func (s *Store) background() {
	defer s.bg.Done()
	renew := time.NewTicker(s.opts.LeaseTTL / 3)
	defer renew.Stop()
	cleanup := time.NewTicker(cleanupEvery(s.opts.TTL))
	defer cleanup.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-renew.C:
			s.renewLeases()
		case <-cleanup.C:
			ctx, cancel := context.WithTimeout(context.Background(), 2*busyTimeout)
			if err := s.expire(ctx); err != nil {
				logger().Warn("session store: deleting expired sessions failed; trying again later", "err", err)
			}
			cancel()
		}
	}
}

// cleanupEvery is how often expired rows are deleted: often enough that
// the file does not keep much dead weight, seldom enough to cost nothing.
func cleanupEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/4, time.Second), 10*time.Minute)
}

// expire deletes the sessions past their TTL with their turns and
// answers, the answers, leases and jobs past theirs.
func (s *Store) expire(ctx context.Context) error {
	return s.write(ctx, "deleting expired sessions", func(tx *sql.Tx) error {
		now := ms(time.Now())
		for _, q := range []string{
			`DELETE FROM turns WHERE session_id IN (SELECT id FROM sessions WHERE expires_at <= ?1)`,
			`DELETE FROM answers WHERE expires_at <= ?1 OR session_id IN (SELECT id FROM sessions WHERE expires_at <= ?1)`,
			`DELETE FROM sessions WHERE expires_at <= ?1`,
			`DELETE FROM leases WHERE expires_at <= ?1`,
			`DELETE FROM jobs WHERE expires_at <= ?1`,
		} {
			if _, err := tx.Exec(q, now); err != nil {
				return err
			}
		}
		return nil
	})
}
