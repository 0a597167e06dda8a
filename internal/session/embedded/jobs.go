package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// The store keeps background jobs (jobs.Store) in the table jobs, one row
// a job: its JSON and the columns its queries need. Every process on the
// file sees every change once committed; a waiter of another process
// sees it at its next poll (jobs.PollEvery: one indexed read of the
// row's version), a waiter of this one at once. A job survives the
// process that wrote it, and is deleted with the expired sessions once
// past its TTL (reads ignore it from then on).

var _ jobs.Store = (*Store)(nil)

const (
	jobLiveSQL = `SELECT count(*), coalesce(sum(owner = ?2), 0) FROM jobs WHERE live = 1 AND expires_at > ?1`
	jobNewSQL  = `INSERT INTO jobs (id, owner, version, live, expires_at, data) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, version = excluded.version, live = excluded.live,
		expires_at = excluded.expires_at, data = excluded.data WHERE jobs.expires_at <= ?7`
	jobSetSQL = `UPDATE jobs SET version = ?, live = ?, expires_at = ?, data = ?
		WHERE id = ? AND owner = ? AND version = ? AND expires_at > ?`
	jobVersionSQL = `SELECT version FROM jobs WHERE id = ? AND owner = ? AND expires_at > ?`
	jobGetSQL     = `SELECT version, data FROM jobs WHERE id = ? AND owner = ? AND expires_at > ?`
	jobListSQL    = `SELECT version, data FROM jobs WHERE owner = ? AND expires_at > ? ORDER BY expires_at DESC, id LIMIT ?`
	// jobResumeExpr is a row's resume handle, as the index jobs_resume
	// keeps it (NULL for none, and for a row that is not JSON), and
	// jobFindSQL finds a row by it through that index: the query must
	// spell the expression as the index does.
	jobResumeExpr = `CASE WHEN json_valid(data) THEN json_extract(data, '$.resume') END`
	jobFindSQL    = `SELECT id, version, data FROM jobs WHERE owner = ? AND ` + jobResumeExpr + ` = ? AND expires_at > ?
		ORDER BY expires_at DESC LIMIT 1`
)

func live(j jobs.Job) int {
	if j.Status.Live() {
		return 1
	}
	return 0
}

// CreateJob implements jobs.Store. The count of live jobs and the insert
// are one write transaction, which SQLite serialises with every other
// process's writes on the file.
func (s *Store) CreateJob(ctx context.Context, j jobs.Job, lim jobs.Limits) (jobs.Job, error) {
	if err := jobs.CheckNew(j); err != nil {
		return jobs.Job{}, err
	}
	lim = lim.WithDefaults()
	j.Version = 1
	data, err := json.Marshal(j)
	if err != nil {
		return jobs.Job{}, fmt.Errorf("session store: %w", err)
	}
	err = s.write(ctx, "creating a job", func(tx *sql.Tx) error {
		now := ms(time.Now())
		if j.Status.Live() {
			var total, owned int
			if err := tx.QueryRowContext(ctx, jobLiveSQL, now, j.Owner).Scan(&total, &owned); err != nil {
				return err
			}
			if owned >= lim.PerOwner {
				return badInput{jobs.OwnerLimitError(lim)}
			}
			if total >= lim.Total {
				return badInput{jobs.TotalLimitError(lim)}
			}
		}
		res, err := tx.ExecContext(ctx, jobNewSQL, j.ID, j.Owner, j.Version, live(j), ms(j.Expires), data, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return badInput{fmt.Errorf("job %s: the id is in use", j.ID)}
		}
		return nil
	})
	if err != nil {
		return jobs.Job{}, err
	}
	return j, nil
}

// GetJob implements jobs.Store.
func (s *Store) GetJob(ctx context.Context, owner, id string) (jobs.Job, bool, error) {
	if err := jobs.CheckID(id); err != nil {
		return jobs.Job{}, false, err
	}
	var v int64
	var data string
	err := s.st.jobGet.QueryRowContext(ctx, id, owner, ms(time.Now())).Scan(&v, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return jobs.Job{}, false, nil
	}
	if err != nil {
		return jobs.Job{}, false, s.dbErr(ctx, "reading a job", err)
	}
	j, err := s.decodeJob(id, v, data)
	return j, err == nil, err
}

func (s *Store) decodeJob(id string, v int64, data string) (jobs.Job, error) {
	var j jobs.Job
	if err := json.Unmarshal([]byte(data), &j); err != nil {
		return jobs.Job{}, s.fail("job "+id+" is corrupt", err)
	}
	j.Version = v
	return j, nil
}

// UpdateJob implements jobs.Store: the row is written only where it still
// has j's owner and version, in one statement.
func (s *Store) UpdateJob(ctx context.Context, j jobs.Job) (jobs.Job, error) {
	if err := j.Check(); err != nil {
		return jobs.Job{}, err
	}
	read := j.Version
	j.Version++
	data, err := json.Marshal(j)
	if err != nil {
		return jobs.Job{}, fmt.Errorf("session store: %w", err)
	}
	err = s.write(ctx, "updating a job", func(tx *sql.Tx) error {
		now := ms(time.Now())
		res, err := tx.ExecContext(ctx, jobSetSQL, j.Version, live(j), ms(j.Expires), data, j.ID, j.Owner, read, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var v int64
		err = tx.QueryRowContext(ctx, jobVersionSQL, j.ID, j.Owner, now).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return badInput{jobs.NotFound(j.ID)}
		}
		if err != nil {
			return err
		}
		return badInput{fmt.Errorf("job %s: version %d, not %d: %w", j.ID, v, read, jobs.ErrConflict)}
	})
	if err != nil {
		return jobs.Job{}, err
	}
	s.jobWake.Notify(j.ID)
	return j, nil
}

// ListJobs implements jobs.Store, through the index of owner and expiry.
func (s *Store) ListJobs(ctx context.Context, owner string, limit int) ([]jobs.Job, error) {
	if limit < 0 {
		return nil, fmt.Errorf("session store: a limit of %d is negative", limit)
	}
	rows, err := s.db.QueryContext(ctx, jobListSQL, owner, ms(time.Now()), limit)
	if err != nil {
		return nil, s.dbErr(ctx, "listing jobs", err)
	}
	defer rows.Close()
	var out []jobs.Job
	for rows.Next() {
		var v int64
		var data string
		if err := rows.Scan(&v, &data); err != nil {
			return nil, s.dbErr(ctx, "listing jobs", err)
		}
		j, err := s.decodeJob("of "+owner, v, data)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr(ctx, "listing jobs", err)
	}
	return out, nil
}

// FindJob implements jobs.Store, through the index jobs_resume.
func (s *Store) FindJob(ctx context.Context, owner, resume string) (jobs.Job, bool, error) {
	if resume == "" {
		return jobs.Job{}, false, nil
	}
	var id, data string
	var v int64
	err := s.db.QueryRowContext(ctx, jobFindSQL, owner, resume, ms(time.Now())).Scan(&id, &v, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return jobs.Job{}, false, nil
	}
	if err != nil {
		return jobs.Job{}, false, s.dbErr(ctx, "finding a job", err)
	}
	j, err := s.decodeJob(id, v, data)
	return j, err == nil, err
}

// WaitJob implements jobs.Store, polling the row's version every
// jobs.PollEvery for the changes of other processes.
func (s *Store) WaitJob(ctx context.Context, owner, id string, version int64, max time.Duration) (jobs.Job, bool, error) {
	vers := func(ctx context.Context) (int64, bool, error) {
		var v int64
		err := s.st.jobVersion.QueryRowContext(ctx, id, owner, ms(time.Now())).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, s.dbErr(ctx, "reading a job", err)
		}
		return v, true, nil
	}
	get := func(ctx context.Context) (jobs.Job, bool, error) { return s.GetJob(ctx, owner, id) }
	return jobs.Wait(ctx, &s.jobWake, id, version, max, jobs.PollEvery, vers, get)
}
