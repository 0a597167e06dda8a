package tools

import (
	"context"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// cancelJob is the caller's cancel of owner's job id (Job.RequestCancel).
// A job that no runner would see the cancel of (queued, or its server
// stopped) ends cancelled at once, and its work is cancelled here
// (cancelUnrun).
func (d *Deps) cancelJob(ctx context.Context, owner, id string) (jobs.Job, error) {
	ended := false
	j, err := jobs.Update(ctx, d.Jobs, owner, id, func(j *jobs.Job) (bool, error) {
		changed := j.RequestCancel(time.Now())
		ended = changed && j.Status == jobs.Cancelled
		return changed, nil
	})
	if err == nil && ended {
		d.cancelUnrun(j)
	}
	return j, err
}

// cancelUnrun cancels the work of job j, cancelled at once by its caller
// because no runner would see the cancel: for a research job, its
// interaction, which would otherwise run on at Google, billed, for
// nobody. A cancelled interaction, or one already done, is answered as it
// is; a failure is left to the API's own end of the interaction.
func (d *Deps) cancelUnrun(j jobs.Job) {
	if j.Tool != "research" || j.Resume == "" || d.Research == nil {
		return
	}
	rs, err := d.Research()
	if err != nil {
		return
	}
	(&researchRun{rs: rs, id: j.Resume}).cancel()
}
