package embedded

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

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
