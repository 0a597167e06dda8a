package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

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
	a, total := a.Fit(budget)
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
