package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// Store keeps jobs where every process sharing it sees them: the session
// store's embedded (SQLite), Redis and memory stores implement it next to
// session.Store. Every method is safe for concurrent use; owner is the
// caller's key, and a job of another owner is answered as one that does
// not exist (ErrNotFound, or ok false), never as forbidden.
type Store interface {
	// CreateJob stores a new job j (Version 0, as New makes it) as version
	// 1 and returns it. When j is live and its owner already has
	// lim.PerOwner live jobs, or the store lim.Total, it stores nothing
	// and returns an error wrapping ErrLimit; the count and the write are
	// one atomic step, so that replicas creating at once cannot pass a
	// limit together. An id already in use is an error.
	CreateJob(ctx context.Context, j Job, lim Limits) (Job, error)

	// GetJob returns owner's job id; ok is false when there is none.
	GetJob(ctx context.Context, owner, id string) (j Job, ok bool, err error)

	// UpdateJob stores j, read at j.Version, as j.Version+1 and returns
	// it: a compare-and-set, so that of two processes changing one job
	// from the same version one wins and the other gets ErrConflict (and
	// reads the job again: see Update). A job that is not j.Owner's, or
	// no longer exists, is ErrNotFound.
	UpdateJob(ctx context.Context, j Job) (Job, error)

	// ListJobs returns owner's jobs, the latest to expire first (the most
	// recently changed first, among jobs of one TTL), at most limit of
	// them: the order the stores' indexes keep, exact to the millisecond.
	ListJobs(ctx context.Context, owner string, limit int) ([]Job, error)

	// FindJob returns owner's job whose Resume is resume (an interaction
	// id), through an index of the handles, so that its cost does not
	// grow with owner's jobs; ok is false when none has it (and for an
	// empty resume). A handle names one job; were it on several, any of
	// them may be returned.
	FindJob(ctx context.Context, owner, resume string) (j Job, ok bool, err error)

	// WaitJob returns owner's job id once its version is other than
	// version, or when max has passed (then unchanged), or when ctx ends
	// (then ctx's error). A change made through this store value is seen
	// at once; one made by another process within the store's poll
	// interval (see each store).
	WaitJob(ctx context.Context, owner, id string, version int64, max time.Duration) (j Job, ok bool, err error)
}

// Limits bound the live jobs (Status.Live) a store keeps: PerOwner for
// one owner, Total for all. A limit of 0 takes its config default.
type Limits struct {
	PerOwner, Total int
}

// WithDefaults returns l with its unset fields set to config's defaults.
func (l Limits) WithDefaults() Limits {
	if l.PerOwner <= 0 {
		l.PerOwner = config.DefaultMaxJobsPerOwner
	}
	if l.Total <= 0 {
		l.Total = config.DefaultMaxJobs
	}
	return l
}

// OwnerLimitError and TotalLimitError are the errors of a refused
// CreateJob, the same from every store.
func OwnerLimitError(l Limits) error {
	return fmt.Errorf("%w: this caller has %d jobs running or waiting, the most it may have: wait for one to finish, or cancel one", ErrLimit, l.PerOwner)
}

// TotalLimitError is the error of a job refused because the server keeps
// l.Total jobs already.
func TotalLimitError(l Limits) error {
	return fmt.Errorf("%w: the server has %d jobs running or waiting, the most it keeps: try again when some have finished", ErrLimit, l.Total)
}

// NotFound is the error of a job that owner cannot see.
func NotFound(id string) error { return fmt.Errorf("job %s: %w", id, ErrNotFound) }

// maxUpdateTries bounds Update's retries of a job that other processes
// keep changing under it.
const maxUpdateTries = 50

// Update reads owner's job id, applies change to it and stores it,
// reading and applying again when another process changed the job in the
// meantime. change may refuse (its error is returned, nothing stored) or
// report that there is nothing to store (false: the job is returned as
// read).
func Update(ctx context.Context, s Store, owner, id string, change func(*Job) (bool, error)) (Job, error) {
	for range maxUpdateTries {
		j, ok, err := s.GetJob(ctx, owner, id)
		if err != nil {
			return Job{}, err
		}
		if !ok {
			return Job{}, NotFound(id)
		}
		if changed, err := change(&j); err != nil || !changed {
			return j, err
		}
		j, err = s.UpdateJob(ctx, j)
		if !errors.Is(err, ErrConflict) {
			return j, err
		}
	}
	return Job{}, fmt.Errorf("job %s: %w %d times in a row", id, ErrConflict, maxUpdateTries)
}

// Cancel is the caller's cancel of owner's job id (Job.RequestCancel):
// a queued job, or one whose runner stopped (Stale), is cancelled at
// once, a running one asked to stop; a finished job is returned as it is.
func Cancel(ctx context.Context, s Store, owner, id string, now time.Time) (Job, error) {
	return Update(ctx, s, owner, id, func(j *Job) (bool, error) { return j.RequestCancel(now), nil })
}

// Task is a job as the Tasks extension (SEP-2663) shows a task, for the
// day the SDK serves tasks/get: the result or error goes inline beside it.
type Task struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

// Task returns j as a task, suggesting that a client poll every
// pollInterval (0 for no suggestion).
func (j Job) Task(pollInterval time.Duration) Task {
	return Task{
		TaskID: j.ID, Status: j.Status.TaskStatus(), StatusMessage: j.Message,
		CreatedAt:     j.Created.UTC().Format(time.RFC3339Nano),
		LastUpdatedAt: j.Updated.UTC().Format(time.RFC3339Nano),
		TTLMs:         j.TTL.Milliseconds(), PollIntervalMs: pollInterval.Milliseconds(),
	}
}

// Heartbeat is how often the process running a job records that it still
// does (the job's Updated moves, with its progress or without);
// StaleAfter is how long a job that has not finished may go without a
// change before it counts as orphaned: the process running it stopped
// (killed, or restarted) and no one will finish it.
const (
	Heartbeat  = 10 * time.Second
	StaleAfter = 6 * Heartbeat
)

// StaleError is the error an orphaned job fails with.
const StaleError = "the server running this job stopped before it finished (no sign of it for over a minute): start the call again"

// Stale reports whether j is orphaned at now: not finished, and
// unchanged for over StaleAfter.
func (j Job) Stale(now time.Time) bool { return !j.Status.Final() && now.Sub(j.Updated) > StaleAfter }

// FailStale fails owner's job id as orphaned if it is stale at now, and
// returns it as it then is.
func FailStale(ctx context.Context, s Store, owner, id string, now time.Time) (Job, error) {
	return Update(ctx, s, owner, id, func(j *Job) (bool, error) {
		if !j.Stale(now) {
			return false, nil
		}
		return true, j.Fail(StaleError, now)
	})
}

// CheckNew checks a job j about to be created, as every store's CreateJob
// does before it counts or writes anything: a sound record (Check), at
// version 0, as New makes it.
func CheckNew(j Job) error {
	if err := j.Check(); err != nil {
		return err
	}
	if j.Version != 0 {
		return fmt.Errorf("job %s: a new job has version 0, not %d", j.ID, j.Version)
	}
	return nil
}
