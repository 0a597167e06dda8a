package embedded

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// schemaV0 is the sessions table and index as version 0 made them.
const schemaV0 = `
CREATE TABLE sessions (
	id TEXT PRIMARY KEY,
	record TEXT,
	updated INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE INDEX sessions_updated ON sessions (updated DESC);
CREATE INDEX sessions_expires ON sessions (expires_at);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('legacy-import', 'done');`

// upsertV0 is how version 0 writes a record, which a process of that
// version sharing the file may still do after the upgrade.
const upsertV0 = `INSERT INTO sessions (id, record, updated, expires_at) VALUES (?, ?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET record = excluded.record, updated = excluded.updated, expires_at = excluded.expires_at`

func sid(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i) }

// TestUpgradeFromVersion0 opens a database that version 0 wrote: its
// records list by every filter at once, a writer of version 0 keeps
// doing right, and a database of a later version is refused.
func TestUpgradeFromVersion0(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	db, err := sql.Open(driverName, dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(schemaV0); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	expires := ms(time.Now().Add(time.Hour))
	recs := map[string]session.Record{}
	for i := range 12 {
		r := session.Record{ID: sid(i), Cwd: []string{"/a", "/b"}[i%2], Owner: []string{"", "o1", "o2"}[i%3],
			LastClient: []string{"token:o1", "mcp:x"}[i/2%2], Backend: []string{"", "api"}[i/3%2],
			Host: []string{"", "h1"}[i/6%2], Created: base, Updated: base.Add(time.Duration(i) * time.Minute), Turns: 1}
		data, _ := json.Marshal(r)
		if _, err := db.Exec(upsertV0, r.ID, string(data), r.Updated.UnixNano(), expires); err != nil {
			t.Fatal(err)
		}
		recs[r.ID] = r
	}
	// A corrupt record and a session with turns only list as none.
	if _, err := db.Exec(upsertV0, sid(100), "{corrupt", base.Add(time.Hour).UnixNano(), expires); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO sessions (id, record, updated, expires_at) VALUES (?, NULL, 0, ?)`, sid(101), expires); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := open(t, path, session.Options{})
	var v int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version after the upgrade: %d %v, want %d", v, err, schemaVersion)
	}
	check := func(what string) {
		t.Helper()
		for _, f := range []session.Filter{{}, {Owner: "o1", ByOwner: true}, {ByOwner: true}, {Client: "mcp:x"}, {Cwd: "/b"},
			{Backend: "cli"}, {Backend: "api", Host: "h1", ByHost: true}, {Owner: "o2", ByOwner: true, Client: "token:o1", Backend: "cli"}} {
			var sel []session.Record
			for _, r := range recs {
				if f.Match(r) {
					sel = append(sel, r)
				}
			}
			slices.SortFunc(sel, func(a, b session.Record) int {
				if c := b.Updated.Compare(a.Updated); c != 0 {
					return c
				}
				return strings.Compare(a.ID, b.ID)
			})
			var want []string
			for _, r := range sel {
				want = append(want, r.ID)
			}
			f.Limit = 100
			got, more, err := s.List(t.Context(), f)
			if err != nil || more {
				t.Fatalf("%s: List(%+v): more %v, %v", what, f, more, err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Errorf("%s: List(%+v) = %v, want %v", what, f, ids, want)
			}
		}
	}
	check("after the upgrade")

	// A writer of version 0 (another process not yet upgraded) changes a
	// record and adds one: the indexes follow.
	r := recs[sid(4)]
	r.LastClient, r.Cwd, r.Updated = "mcp:y", "/c", base.Add(2*time.Hour)
	data, _ := json.Marshal(r)
	if _, err := s.db.Exec(upsertV0, r.ID, string(data), r.Updated.UnixNano(), expires); err != nil {
		t.Fatal(err)
	}
	recs[r.ID] = r
	n := session.Record{ID: sid(150), Cwd: "/a", Owner: "o1", LastClient: "token:o1", Backend: "api", Updated: base.Add(3 * time.Hour)}
	data, _ = json.Marshal(n)
	if _, err := s.db.Exec(upsertV0, n.ID, string(data), n.Updated.UnixNano(), expires); err != nil {
		t.Fatal(err)
	}
	recs[n.ID] = n
	// And this version's Touch.
	tr, err := s.Touch(t.Context(), sid(7), session.Turn{Cwd: "/d", Client: "mcp:z"}, base.Add(4*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	recs[tr.ID] = tr
	check("after writes of both versions")
	if _, err := s.db.Exec(`SELECT 1 FROM sessions INDEXED BY sessions_updated`); err == nil {
		t.Error("the index of version 0 is still there")
	}
	s.Close()

	// Opening again changes nothing.
	s = open(t, path, session.Options{})
	check("reopened")
	s.Close()

	// A database of a later version is refused, not changed.
	if db, err = sql.Open(driverName, dsn(path)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := Open(path, session.Options{}); err == nil || !strings.Contains(err.Error(), "later version") || errors.Is(err, session.ErrUnavailable) {
		if s != nil {
			s.Close()
		}
		t.Errorf("Open of a database of a later version: %v", err)
	}
}
