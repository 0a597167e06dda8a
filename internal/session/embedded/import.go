package embedded

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// The store before this one kept each session as files in
// <state>/sessions: <id>.json, the record (session.Record as JSON), and
// <id>.turns.jsonl, the API backend's turns, one JSON value a line (a last
// line without its newline was a write a crash cut short). Open imports
// them into a database that has never imported, in one transaction, so
// that upgrading loses no session; the files stay where they are, for a
// downgrade. Imported sessions live one TTL from the import, not from
// their last turn: the old store kept sessions for ever, and a user
// coming back after the upgrade should find them.

// legacyKey marks, in the meta table, a database that has looked for the
// old files (whether or not it found any).
const legacyKey = "legacy-import"

func (s *Store) importLegacy(ctx context.Context) error {
	dir := filepath.Join(filepath.Dir(s.path), "sessions")
	var sessions, turns int
	err := s.write(ctx, "importing the old session files", func(tx *sql.Tx) error {
		var done string
		err := tx.QueryRow(`SELECT value FROM meta WHERE key = ?`, legacyKey).Scan(&done)
		if err == nil {
			return nil // imported already, maybe by another process
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		sessions, turns, err = s.importDir(tx, dir)
		if err != nil {
			return err
		}
		_, err = tx.Exec(`INSERT INTO meta (key, value) VALUES (?, ?)`, legacyKey, time.Now().UTC().Format(time.RFC3339))
		return err
	})
	if err != nil {
		return err
	}
	if sessions > 0 || turns > 0 {
		logger().Info("session store: imported the sessions of the earlier file store; its files are left in place",
			"from", dir, "into", s.path, "sessions", sessions, "turns", turns)
	}
	return nil
}

// importDir imports the records and turns files in dir, returning how many
// sessions and turns it imported. Unreadable or corrupt files are skipped
// with a warning: they could not have been continued before either.
func (s *Store) importDir(tx *sql.Tx, dir string) (sessions, turns int, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		logger().Warn("session store: cannot read the earlier file store; its sessions are not imported", "dir", dir, "err", err)
		return 0, 0, nil
	}
	expires := ms(time.Now().Add(s.opts.TTL))
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".turns.jsonl"):
			id := strings.TrimSuffix(name, ".turns.jsonl")
			if checkID(id) != nil || !e.Type().IsRegular() {
				continue
			}
			lines, err := readTurns(filepath.Join(dir, name))
			if err != nil {
				logger().Warn("session store: an old turns file is not imported", "file", filepath.Join(dir, name), "err", err)
				continue
			}
			if len(lines) == 0 {
				continue
			}
			if _, err := tx.Exec(`INSERT INTO sessions (id, record, updated, expires_at) VALUES (?, NULL, 0, ?)
				ON CONFLICT (id) DO NOTHING`, id, expires); err != nil {
				return 0, 0, err
			}
			for i, line := range lines {
				if _, err := tx.Exec(`INSERT INTO turns (session_id, seq, data) VALUES (?, ?, ?)`, id, i+1, line); err != nil {
					return 0, 0, err
				}
			}
			turns += len(lines)
		case strings.HasSuffix(name, ".json"):
			id := strings.TrimSuffix(name, ".json")
			if checkID(id) != nil || !e.Type().IsRegular() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, name))
			var r session.Record
			if err == nil {
				err = json.Unmarshal(data, &r)
			}
			if err != nil {
				logger().Warn("session store: an old session record is not imported", "file", filepath.Join(dir, name), "err", err)
				continue
			}
			r.ID = id
			rec, err := json.Marshal(r)
			if err != nil {
				return 0, 0, err
			}
			if _, err := tx.Exec(`INSERT INTO sessions (id, record, updated, expires_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (id) DO UPDATE SET record = excluded.record, updated = excluded.updated`,
				id, string(rec), r.Updated.UnixNano(), expires); err != nil {
				return 0, 0, err
			}
			sessions++
		}
	}
	return sessions, turns, nil
}

// readTurns reads an old turns file: one compact JSON value a line,
// ignoring a last line a crash left without its newline.
func readTurns(p string) ([]string, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	var lines []string
	for n := 1; len(data) > 0; n++ {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		var b bytes.Buffer
		if err := json.Compact(&b, line); err != nil || !json.Valid(line) {
			return nil, fmt.Errorf("line %d is not JSON", n)
		}
		lines = append(lines, b.String())
	}
	return lines, nil
}
