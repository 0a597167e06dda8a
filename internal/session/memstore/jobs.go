package memstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// jobTable keeps the store's jobs, each as its JSON (as the shared stores
// keep it, so that a caller's copy shares nothing with the stored one).
// Expired jobs are ignored by every read and forgotten by the next
// CreateJob.
type jobTable struct {
	mu   sync.Mutex
	byID map[string]storedJob
	// byResume indexes the jobs by owner and resume handle (resumeKey)
	// for FindJob: the id of the job last stored with it.
	byResume map[string]string
	notify   jobs.Notifier
}

type storedJob struct {
	id      string
	owner   string
	version int64
	live    bool
	expires time.Time
	resume  string
	data    []byte
}

func resumeKey(owner, resume string) string {
	return fmt.Sprintf("%d:%s:%s", len(owner), owner, resume)
}

// put stores sj, keeping byResume; t.mu must be held.
func (t *jobTable) put(sj storedJob) {
	if old, ok := t.byID[sj.id]; ok && old.resume != sj.resume {
		t.unindex(old)
	}
	t.byID[sj.id] = sj
	if sj.resume != "" {
		if t.byResume == nil {
			t.byResume = map[string]string{}
		}
		t.byResume[resumeKey(sj.owner, sj.resume)] = sj.id
	}
}

// unindex drops sj from byResume, unless another job took its entry;
// t.mu must be held.
func (t *jobTable) unindex(sj storedJob) {
	k := resumeKey(sj.owner, sj.resume)
	if sj.resume != "" && t.byResume[k] == sj.id {
		delete(t.byResume, k)
	}
}

var _ jobs.Store = (*Store)(nil)

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// get returns owner's unexpired job id; t.mu must be held.
func (t *jobTable) get(owner, id string, now time.Time) (storedJob, bool) {
	sj, ok := t.byID[id]
	if !ok || sj.owner != owner || !now.Before(sj.expires) {
		return storedJob{}, false
	}
	return sj, true
}

func store(j jobs.Job) (storedJob, error) {
	data, err := json.Marshal(j)
	if err != nil {
		return storedJob{}, fmt.Errorf("memory session store: %w", err)
	}
	return storedJob{id: j.ID, owner: j.Owner, version: j.Version, live: j.Status.Live(), expires: j.Expires, resume: j.Resume, data: data}, nil
}

func (sj storedJob) job() (jobs.Job, error) {
	var j jobs.Job
	if err := json.Unmarshal(sj.data, &j); err != nil {
		return jobs.Job{}, fmt.Errorf("memory session store: %w", err)
	}
	return j, nil
}

// CreateJob implements jobs.Store.
func (s *Store) CreateJob(_ context.Context, j jobs.Job, lim jobs.Limits) (jobs.Job, error) {
	if s.isClosed() {
		return jobs.Job{}, errClosed
	}
	if err := jobs.CheckNew(j); err != nil {
		return jobs.Job{}, err
	}
	lim = lim.WithDefaults()
	t := &s.jobs
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string]storedJob{}
	}
	now := time.Now()
	owned, total := 0, 0
	for id, sj := range t.byID {
		switch {
		case !now.Before(sj.expires):
			t.unindex(sj)
			delete(t.byID, id)
		case sj.live:
			total++
			if sj.owner == j.Owner {
				owned++
			}
		}
	}
	if _, ok := t.byID[j.ID]; ok {
		return jobs.Job{}, fmt.Errorf("job %s: the id is in use", j.ID)
	}
	if j.Status.Live() && owned >= lim.PerOwner {
		return jobs.Job{}, jobs.OwnerLimitError(lim)
	}
	if j.Status.Live() && total >= lim.Total {
		return jobs.Job{}, jobs.TotalLimitError(lim)
	}
	j.Version = 1
	sj, err := store(j)
	if err != nil {
		return jobs.Job{}, err
	}
	t.put(sj)
	return j, nil
}

// GetJob implements jobs.Store.
func (s *Store) GetJob(_ context.Context, owner, id string) (jobs.Job, bool, error) {
	if err := jobs.CheckID(id); err != nil {
		return jobs.Job{}, false, err
	}
	if s.isClosed() {
		return jobs.Job{}, false, errClosed
	}
	s.jobs.mu.Lock()
	sj, ok := s.jobs.get(owner, id, time.Now())
	s.jobs.mu.Unlock()
	if !ok {
		return jobs.Job{}, false, nil
	}
	j, err := sj.job()
	return j, err == nil, err
}

// UpdateJob implements jobs.Store.
func (s *Store) UpdateJob(_ context.Context, j jobs.Job) (jobs.Job, error) {
	if err := j.Check(); err != nil {
		return jobs.Job{}, err
	}
	if s.isClosed() {
		return jobs.Job{}, errClosed
	}
	t := &s.jobs
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.get(j.Owner, j.ID, time.Now())
	if !ok {
		return jobs.Job{}, jobs.NotFound(j.ID)
	}
	if old.version != j.Version {
		return jobs.Job{}, fmt.Errorf("job %s: version %d, not %d: %w", j.ID, old.version, j.Version, jobs.ErrConflict)
	}
	j.Version++
	sj, err := store(j)
	if err != nil {
		return jobs.Job{}, err
	}
	t.put(sj)
	t.notify.Notify(j.ID)
	return j, nil
}

// ListJobs implements jobs.Store.
func (s *Store) ListJobs(_ context.Context, owner string, limit int) ([]jobs.Job, error) {
	if limit < 0 {
		return nil, fmt.Errorf("memory session store: a limit of %d is negative", limit)
	}
	if s.isClosed() {
		return nil, errClosed
	}
	t := &s.jobs
	t.mu.Lock()
	var mine []storedJob
	now := time.Now()
	for id := range t.byID {
		if sj, ok := t.get(owner, id, now); ok {
			mine = append(mine, sj)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(mine, func(a, b storedJob) int {
		return cmp.Or(b.expires.Compare(a.expires), cmp.Compare(a.id, b.id))
	})
	out := make([]jobs.Job, 0, min(limit, len(mine)))
	for _, sj := range mine[:min(limit, len(mine))] {
		j, err := sj.job()
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// FindJob implements jobs.Store, through the index of resume handles.
func (s *Store) FindJob(_ context.Context, owner, resume string) (jobs.Job, bool, error) {
	if s.isClosed() {
		return jobs.Job{}, false, errClosed
	}
	if resume == "" {
		return jobs.Job{}, false, nil
	}
	t := &s.jobs
	t.mu.Lock()
	sj, ok := t.get(owner, t.byResume[resumeKey(owner, resume)], time.Now())
	t.mu.Unlock()
	if !ok || sj.resume != resume {
		return jobs.Job{}, false, nil
	}
	j, err := sj.job()
	return j, err == nil, err
}

// WaitJob implements jobs.Store: every change is made here, so waiters
// are woken by it and never poll.
func (s *Store) WaitJob(ctx context.Context, owner, id string, version int64, max time.Duration) (jobs.Job, bool, error) {
	vers := func(context.Context) (int64, bool, error) {
		if s.isClosed() {
			return 0, false, errClosed
		}
		s.jobs.mu.Lock()
		defer s.jobs.mu.Unlock()
		sj, ok := s.jobs.get(owner, id, time.Now())
		return sj.version, ok, nil
	}
	get := func(ctx context.Context) (jobs.Job, bool, error) { return s.GetJob(ctx, owner, id) }
	return jobs.Wait(ctx, &s.jobs.notify, id, version, max, 0, vers, get)
}
