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
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

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

	closing chan struct{} // closed by Close: stops the background work and waiting Leases
	bg      sync.WaitGroup
	once    sync.Once
}

var _ session.Store = (*Store)(nil)

// schema creates the tables. Times are Unix milliseconds.
const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	id TEXT PRIMARY KEY,
	record TEXT,                -- JSON of session.Record; NULL while the session has turns only
	updated INTEGER NOT NULL,   -- record.Updated in Unix nanoseconds, for List's order
	expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_expires ON sessions (expires_at);
CREATE TABLE IF NOT EXISTS turns (
	session_id TEXT NOT NULL,
	seq INTEGER NOT NULL,
	data TEXT NOT NULL,
	PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS answers (
	n INTEGER PRIMARY KEY AUTOINCREMENT, -- age order, for dropping the oldest
	id TEXT NOT NULL UNIQUE,
	session_id TEXT NOT NULL,            -- '' when the answer has no session
	data TEXT NOT NULL,                  -- JSON of session.PagedAnswer
	bytes INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS answers_session ON answers (session_id);
CREATE TABLE IF NOT EXISTS leases (
	id TEXT PRIMARY KEY,
	holder TEXT NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
	key TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
`

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
	if path == "" {
		return nil, errors.New("session store: no database file given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	opts = opts.WithDefaults()
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("session store: %w: %w", session.ErrUnavailable, err)
	}
	// SQLite creates the WAL and shared-memory files with the database
	// file's mode, so creating it private first keeps all three private.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session store: %w: %w", session.ErrUnavailable, err)
	}
	f.Close()

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

const getSQL = `SELECT record FROM sessions WHERE id = ? AND record IS NOT NULL AND expires_at > ?`

// Get returns the record of session id.
func (s *Store) Get(ctx context.Context, id string) (session.Record, bool, error) {
	if err := checkID(id); err != nil {
		return session.Record{}, false, err
	}
	var data string
	err := s.st.get.QueryRowContext(ctx, id, ms(time.Now())).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return session.Record{}, false, nil
	}
	if err != nil {
		return session.Record{}, false, s.dbErr(ctx, "reading a session", err)
	}
	var r session.Record
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		return session.Record{}, false, s.fail("session "+id+" is corrupt", err)
	}
	return r, true, nil
}

const liveSQL = `SELECT record, expires_at FROM sessions WHERE id = ?`

// live reads session id's row in tx and says whether it holds a live
// session. An expired row is purged with its turns and answers first, so
// that a session coming back after expiry starts afresh.
func (s *Store) live(ctx context.Context, tx *sql.Tx, id string, now int64) (record sql.NullString, ok bool, err error) {
	var expires int64
	err = tx.StmtContext(ctx, s.st.live).QueryRowContext(ctx, id).Scan(&record, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return record, false, nil
	}
	if err != nil {
		return record, false, err
	}
	if expires > now {
		return record, true, nil
	}
	return sql.NullString{}, false, s.purge(ctx, tx, id)
}

const (
	purgeTurnsSQL   = `DELETE FROM turns WHERE session_id = ?`
	purgeAnswersSQL = `DELETE FROM answers WHERE session_id = ?`
	purgeSessionSQL = `DELETE FROM sessions WHERE id = ?`
)

// purge deletes everything of session id.
func (s *Store) purge(ctx context.Context, tx *sql.Tx, id string) error {
	for _, st := range []*sql.Stmt{s.st.purgeTurns, s.st.purgeAnswers, s.st.purgeSession} {
		if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

const upsertRecordSQL = `INSERT INTO sessions (id, record, updated, expires_at) VALUES (?, ?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET record = excluded.record, updated = excluded.updated, expires_at = excluded.expires_at`

// Touch records a finished turn of session id.
func (s *Store) Touch(ctx context.Context, id string, t session.Turn, now time.Time) (session.Record, error) {
	if err := checkID(id); err != nil {
		return session.Record{}, err
	}
	var r session.Record
	err := s.write(ctx, "recording a turn", func(tx *sql.Tx) error {
		old, _, err := s.live(ctx, tx, id, ms(time.Now()))
		if err != nil {
			return err
		}
		r = session.Record{}
		if old.Valid {
			if err := json.Unmarshal([]byte(old.String), &r); err != nil {
				// A corrupt record is replaced rather than blocking the
				// session.
				r = session.Record{}
			}
		}
		r = session.Apply(r, r.ID != "", id, t, now)
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, s.st.upsertRecord).ExecContext(ctx,
			id, string(data), now.UnixNano(), ms(time.Now().Add(s.opts.TTL)))
		return err
	})
	if err != nil {
		return session.Record{}, err
	}
	return r, nil
}

// List returns the live records f selects, newest first, from the
// indexes on the record's fields (see migrations): a page costs the rows
// of its offset and limit, whatever the sessions stored. "Owner or none"
// is two ranges of the owner index, each cut at the page's end, merged.
func (s *Store) List(ctx context.Context, f session.Filter) ([]session.Record, bool, error) {
	if err := f.Check(); err != nil {
		return nil, false, err
	}
	query, args := listQuery(f, ms(time.Now()))
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, s.dbErr(ctx, "listing sessions", err)
	}
	defer rows.Close()
	var recs []session.Record
	more := false
	for rows.Next() {
		if len(recs) >= f.Limit {
			more = true
			break
		}
		var data string
		if err := rows.Scan(&data); err != nil {
			return nil, false, s.dbErr(ctx, "listing sessions", err)
		}
		var r session.Record
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			continue // a corrupt record lists as none
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.dbErr(ctx, "listing sessions", err)
	}
	return recs, more, nil
}

// listQuery is List's SQL for f at now: the selected rows from offset on,
// one more than the limit (to tell whether more follow).
func listQuery(f session.Filter, now int64) (string, []any) {
	where := "record IS NOT NULL AND expires_at > ?"
	args := []any{now}
	for _, c := range []struct {
		col, val string
		on       bool
	}{
		{"last_client", f.Client, f.Client != ""},
		{"cwd", f.Cwd, f.Cwd != ""},
		{"family", f.Backend, f.Backend != ""},
	} {
		if c.on {
			where += " AND " + c.col + " = ?"
			args = append(args, c.val)
		}
	}
	if f.ByHost {
		where += " AND host IN ('', ?)"
		args = append(args, f.Host)
	}
	// The rows wanted: limit+1 after offset, without overflowing (-1 is
	// no limit to SQLite).
	fetch, upto := int64(-1), int64(-1)
	if f.Limit < math.MaxInt64 {
		fetch = int64(f.Limit) + 1
		if int64(f.Offset) <= math.MaxInt64-fetch {
			upto = int64(f.Offset) + fetch
		}
	}
	const order = " ORDER BY updated DESC, id"
	if !f.ByOwner {
		return "SELECT record FROM sessions WHERE " + where + order + " LIMIT ? OFFSET ?", append(args, fetch, f.Offset)
	}
	branch := func(owner string) (string, []any) {
		a := append(append([]any(nil), args...), owner, upto)
		return "SELECT * FROM (SELECT record, updated, id FROM sessions WHERE " + where + " AND owner = ?" + order + " LIMIT ?)", a
	}
	q, a := branch("")
	if f.Owner != "" {
		q2, a2 := branch(f.Owner)
		q, a = q+" UNION ALL "+q2, append(a, a2...)
	}
	return "SELECT record FROM (" + q + ")" + order + " LIMIT ? OFFSET ?", append(a, fetch, f.Offset)
}

// schemaVersion is the version of the database's tables, in its
// user_version: 0 before the migrations below, which Open makes once, in
// one transaction, on a database of an earlier version (and any process
// of that version may go on writing it).
const schemaVersion = 1

// migrations[v] takes the tables from version v to v+1.
var migrations = []string{
	// 1: the record's fields List filters on, as columns generated from
	// its JSON (so that a writer of version 0 keeps them right), with
	// indexes in List's order. A record that is not JSON has none.
	`DROP INDEX IF EXISTS sessions_updated;
	ALTER TABLE sessions ADD COLUMN owner TEXT GENERATED ALWAYS AS (` + field(`coalesce(json_extract(record, '$.owner'), '')`) + `) VIRTUAL;
	ALTER TABLE sessions ADD COLUMN last_client TEXT GENERATED ALWAYS AS (` + field(`coalesce(json_extract(record, '$.lastClient'), '')`) + `) VIRTUAL;
	ALTER TABLE sessions ADD COLUMN cwd TEXT GENERATED ALWAYS AS (` + field(`json_extract(record, '$.cwd')`) + `) VIRTUAL;
	ALTER TABLE sessions ADD COLUMN family TEXT GENERATED ALWAYS AS (` + field(`coalesce(nullif(json_extract(record, '$.backend'), ''), 'cli')`) + `) VIRTUAL;
	ALTER TABLE sessions ADD COLUMN host TEXT GENERATED ALWAYS AS (` + field(`coalesce(json_extract(record, '$.host'), '')`) + `) VIRTUAL;
	CREATE INDEX sessions_order ON sessions (updated DESC, id);
	CREATE INDEX sessions_owner ON sessions (owner, updated DESC, id);
	CREATE INDEX sessions_client ON sessions (last_client, updated DESC, id);
	CREATE INDEX sessions_client_owner ON sessions (last_client, owner, updated DESC, id);
	CREATE INDEX sessions_cwd ON sessions (cwd, updated DESC, id);`,
}

// field is a generated column's expression of the record's JSON: NULL
// for a row without a valid record.
func field(expr string) string {
	return "CASE WHEN json_valid(record) THEN " + expr + " END"
}

// migrate brings the tables to schemaVersion.
func (s *Store) migrate(ctx context.Context) error {
	return s.write(ctx, "upgrading the tables", func(tx *sql.Tx) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		if v > schemaVersion {
			return badInput{fmt.Errorf("session store %s: the database is of a later version (%d) of this server than this one (%d): upgrade the server, or use another --store",
				s.path, v, schemaVersion)}
		}
		for ; v < schemaVersion; v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
		return err
	})
}

// Delete forgets session id.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	return s.write(ctx, "deleting a session", func(tx *sql.Tx) error { return s.purge(ctx, tx, id) })
}

const loadTurnsSQL = `SELECT t.data FROM turns t JOIN sessions s ON s.id = t.session_id
	WHERE t.session_id = ? AND s.expires_at > ? ORDER BY t.seq`

// LoadTurns returns the turns of session id, oldest first.
func (s *Store) LoadTurns(ctx context.Context, id string) ([]json.RawMessage, bool, error) {
	if err := checkID(id); err != nil {
		return nil, false, err
	}
	rows, err := s.st.loadTurns.QueryContext(ctx, id, ms(time.Now()))
	if err != nil {
		return nil, false, s.dbErr(ctx, "reading turns", err)
	}
	defer rows.Close()
	var turns []json.RawMessage
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, false, s.dbErr(ctx, "reading turns", err)
		}
		turns = append(turns, json.RawMessage(data))
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.dbErr(ctx, "reading turns", err)
	}
	return turns, len(turns) > 0, nil
}

const appendTurnSQL = `INSERT INTO turns (session_id, seq, data)
	VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE session_id = ?), ?)`

// AppendTurn records one more turn of session id: one row, whatever the
// conversation's length.
func (s *Store) AppendTurn(ctx context.Context, id string, turn json.RawMessage) error {
	if err := checkID(id); err != nil {
		return err
	}
	data, err := compactTurn(turn)
	if err != nil {
		return err
	}
	return s.write(ctx, "recording a turn", func(tx *sql.Tx) error {
		if _, _, err := s.live(ctx, tx, id, ms(time.Now())); err != nil {
			return err
		}
		if err := s.extend(ctx, tx, id); err != nil {
			return err
		}
		_, err := tx.StmtContext(ctx, s.st.appendTurn).ExecContext(ctx, id, id, data)
		return err
	})
}

const extendSQL = `INSERT INTO sessions (id, record, updated, expires_at) VALUES (?, NULL, 0, ?)
	ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at`

// extend restarts session id's TTL, creating a row without a record for
// a session that has turns only.
func (s *Store) extend(ctx context.Context, tx *sql.Tx, id string) error {
	_, err := tx.StmtContext(ctx, s.st.extend).ExecContext(ctx, id, ms(time.Now().Add(s.opts.TTL)))
	return err
}

// compactTurn checks that turn is one JSON value and compacts it.
func compactTurn(turn json.RawMessage) (string, error) {
	if !json.Valid(turn) {
		return "", errors.New("session store: a turn must be one JSON value")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, turn); err != nil {
		return "", fmt.Errorf("session store: a turn must be JSON: %w", err)
	}
	return b.String(), nil
}

const (
	dropAnswerSQL     = `DELETE FROM answers WHERE expires_at <= ? OR id = ?`
	answerBytesSQL    = `SELECT coalesce(sum(bytes), 0) FROM answers`
	oldestAnswersSQL  = `SELECT n, bytes FROM answers ORDER BY n`
	dropOldAnswersSQL = `DELETE FROM answers WHERE n <= ?`
	putAnswerSQL      = `INSERT INTO answers (id, session_id, data, bytes, expires_at) VALUES (?, ?, ?, ?, ?)`
)

// PutAnswer keeps an answer's pages, dropping the oldest answers beyond
// the budget for pages.
func (s *Store) PutAnswer(ctx context.Context, a session.PagedAnswer) error {
	if err := checkID(a.ID); err != nil {
		return err
	}
	if a.SessionID != "" {
		if err := checkID(a.SessionID); err != nil {
			return err
		}
	}
	budget := s.opts.MaxPagedBytes
	total := 0
	for _, p := range a.Pages {
		total += len(p)
	}
	if total > budget {
		// An answer larger than the whole budget keeps its first pages
		// (at least one) and counts the rest as dropped.
		kept, n := 0, 0
		for kept < len(a.Pages) && (kept == 0 || n+len(a.Pages[kept]) <= budget) {
			n += len(a.Pages[kept])
			kept++
		}
		a.Pages = a.Pages[:kept:kept]
		a.Dropped += total - n
		total = n
	}
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	return s.write(ctx, "keeping an answer's pages", func(tx *sql.Tx) error {
		now := ms(time.Now())
		if _, err := tx.StmtContext(ctx, s.st.dropAnswer).ExecContext(ctx, now, a.ID); err != nil {
			return err
		}
		var used int
		if err := tx.StmtContext(ctx, s.st.answerBytes).QueryRowContext(ctx).Scan(&used); err != nil {
			return err
		}
		if used+total > budget {
			// Drop the oldest answers until the new one fits.
			rows, err := tx.StmtContext(ctx, s.st.oldestAnswers).QueryContext(ctx)
			if err != nil {
				return err
			}
			last := int64(-1)
			for used+total > budget && rows.Next() {
				var b int
				if err := rows.Scan(&last, &b); err != nil {
					rows.Close()
					return err
				}
				used -= b
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if _, err := tx.StmtContext(ctx, s.st.dropOldAnswers).ExecContext(ctx, last); err != nil {
				return err
			}
		}
		_, err := tx.StmtContext(ctx, s.st.putAnswer).ExecContext(ctx,
			a.ID, a.SessionID, string(data), total, ms(time.Now().Add(s.opts.TTL)))
		return err
	})
}

const getAnswerSQL = `SELECT a.data FROM answers a LEFT JOIN sessions s ON s.id = a.session_id
	WHERE a.id = ? AND coalesce(s.expires_at, a.expires_at) > ?`

// GetAnswer returns the answer with id. An answer of a session lives as
// long as its session; one without lives a TTL from when it was put.
func (s *Store) GetAnswer(ctx context.Context, id string) (session.PagedAnswer, bool, error) {
	if err := checkID(id); err != nil {
		return session.PagedAnswer{}, false, err
	}
	var data string
	err := s.st.getAnswer.QueryRowContext(ctx, id, ms(time.Now())).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return session.PagedAnswer{}, false, nil
	}
	if err != nil {
		return session.PagedAnswer{}, false, s.dbErr(ctx, "reading an answer", err)
	}
	var a session.PagedAnswer
	if err := json.Unmarshal([]byte(data), &a); err != nil {
		return session.PagedAnswer{}, false, s.fail("answer "+id+" is corrupt", err)
	}
	return a, true, nil
}

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
// answers, the answers and leases past theirs.
func (s *Store) expire(ctx context.Context) error {
	return s.write(ctx, "deleting expired sessions", func(tx *sql.Tx) error {
		now := ms(time.Now())
		for _, q := range []string{
			`DELETE FROM turns WHERE session_id IN (SELECT id FROM sessions WHERE expires_at <= ?1)`,
			`DELETE FROM answers WHERE expires_at <= ?1 OR session_id IN (SELECT id FROM sessions WHERE expires_at <= ?1)`,
			`DELETE FROM sessions WHERE expires_at <= ?1`,
			`DELETE FROM leases WHERE expires_at <= ?1`,
		} {
			if _, err := tx.Exec(q, now); err != nil {
				return err
			}
		}
		return nil
	})
}
