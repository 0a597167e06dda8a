package embedded

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

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
