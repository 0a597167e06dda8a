package embedded

import (
	"context"
	"database/sql"
	"fmt"
)

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
CREATE TABLE IF NOT EXISTS jobs (
	id TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	version INTEGER NOT NULL,  -- jobs.Job.Version, for UpdateJob's compare-and-set
	live INTEGER NOT NULL,     -- 1 while the job counts against the limits
	expires_at INTEGER NOT NULL, -- also ListJobs' order
	data TEXT NOT NULL         -- JSON of jobs.Job
);
CREATE INDEX IF NOT EXISTS jobs_owner ON jobs (owner, expires_at DESC, id);
CREATE INDEX IF NOT EXISTS jobs_live ON jobs (live, expires_at);
CREATE INDEX IF NOT EXISTS jobs_expires ON jobs (expires_at);
CREATE INDEX IF NOT EXISTS jobs_resume ON jobs (owner, ` + jobResumeExpr + `, expires_at); -- FindJob's
CREATE TABLE IF NOT EXISTS manifests (
	id INTEGER PRIMARY KEY,
	key BLOB NOT NULL UNIQUE,  -- manifest.Record.Key (a root, NUL, a scope)
	store TEXT NOT NULL,
	used_at INTEGER NOT NULL,
	files INTEGER NOT NULL     -- its rows in manifest_files, for the bound
);
CREATE TABLE IF NOT EXISTS manifest_files (
	manifest INTEGER NOT NULL, -- manifests.id
	path TEXT NOT NULL,
	hash TEXT NOT NULL,
	document TEXT NOT NULL,
	PRIMARY KEY (manifest, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
	key TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
`

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
