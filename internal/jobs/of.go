package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Of returns the jobs of the session store st, which may be wrapped
// (session.Opening, session.Observed): every store keeps jobs beside its
// sessions. A store that does not is an error of each call, wrapping
// session.ErrUnavailable.
func Of(st session.Store) Store { return of{st} }

type of struct{ st session.Store }

func (o of) store(ctx context.Context) (Store, error) {
	st, err := session.Unwrap(ctx, o.st)
	if err != nil {
		return nil, err
	}
	js, ok := st.(Store)
	if !ok {
		return nil, fmt.Errorf("%w: the session store %T keeps no jobs", session.ErrUnavailable, st)
	}
	return js, nil
}

func (o of) CreateJob(ctx context.Context, j Job, lim Limits) (Job, error) {
	s, err := o.store(ctx)
	if err != nil {
		return Job{}, err
	}
	return s.CreateJob(ctx, j, lim)
}

func (o of) GetJob(ctx context.Context, owner, id string) (Job, bool, error) {
	s, err := o.store(ctx)
	if err != nil {
		return Job{}, false, err
	}
	return s.GetJob(ctx, owner, id)
}

func (o of) UpdateJob(ctx context.Context, j Job) (Job, error) {
	s, err := o.store(ctx)
	if err != nil {
		return Job{}, err
	}
	return s.UpdateJob(ctx, j)
}

func (o of) ListJobs(ctx context.Context, owner string, limit int) ([]Job, error) {
	s, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.ListJobs(ctx, owner, limit)
}

func (o of) FindJob(ctx context.Context, owner, resume string) (Job, bool, error) {
	s, err := o.store(ctx)
	if err != nil {
		return Job{}, false, err
	}
	return s.FindJob(ctx, owner, resume)
}

func (o of) WaitJob(ctx context.Context, owner, id string, version int64, max time.Duration) (Job, bool, error) {
	s, err := o.store(ctx)
	if err != nil {
		return Job{}, false, err
	}
	return s.WaitJob(ctx, owner, id, version, max)
}
