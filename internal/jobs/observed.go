package jobs

import (
	"context"
	"time"
)

// Observed returns st with each operation reported to observe, as
// session.Observed reports the session store's: its name (the method's),
// its duration and its error (nil on success; a job not found is a
// success of GetJob and WaitJob). The store metrics count the jobs' calls
// through it. WaitJob's duration is its wait for the job to change, up to
// the time asked, not only the store's; a WaitJob its caller stopped (its
// ctx ended) is a success, as the watch of every running job ends that way.
func Observed(st Store, observe func(op string, d time.Duration, err error)) Store {
	return &observed{st: st, observe: observe}
}

type observed struct {
	st      Store
	observe func(op string, d time.Duration, err error)
}

func (o *observed) done(op string, start time.Time, err error) { o.observe(op, time.Since(start), err) }

func (o *observed) CreateJob(ctx context.Context, j Job, lim Limits) (Job, error) {
	start := time.Now()
	j, err := o.st.CreateJob(ctx, j, lim)
	o.done("CreateJob", start, err)
	return j, err
}

func (o *observed) GetJob(ctx context.Context, owner, id string) (Job, bool, error) {
	start := time.Now()
	j, ok, err := o.st.GetJob(ctx, owner, id)
	o.done("GetJob", start, err)
	return j, ok, err
}

func (o *observed) UpdateJob(ctx context.Context, j Job) (Job, error) {
	start := time.Now()
	j, err := o.st.UpdateJob(ctx, j)
	o.done("UpdateJob", start, err)
	return j, err
}

func (o *observed) ListJobs(ctx context.Context, owner string, limit int) ([]Job, error) {
	start := time.Now()
	js, err := o.st.ListJobs(ctx, owner, limit)
	o.done("ListJobs", start, err)
	return js, err
}

func (o *observed) FindJob(ctx context.Context, owner, resume string) (Job, bool, error) {
	start := time.Now()
	j, ok, err := o.st.FindJob(ctx, owner, resume)
	o.done("FindJob", start, err)
	return j, ok, err
}

func (o *observed) WaitJob(ctx context.Context, owner, id string, version int64, max time.Duration) (Job, bool, error) {
	start := time.Now()
	j, ok, err := o.st.WaitJob(ctx, owner, id, version, max)
	failed := err
	if ctx.Err() != nil {
		failed = nil
	}
	o.done("WaitJob", start, failed)
	return j, ok, err
}
