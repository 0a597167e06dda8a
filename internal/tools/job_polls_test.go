package tools

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// countingJobs counts the job store's writes.
type countingJobs struct {
	jobs.Store
	writes atomic.Int64
}

func (c *countingJobs) UpdateJob(ctx context.Context, j jobs.Job) (jobs.Job, error) {
	c.writes.Add(1)
	return c.Store.UpdateJob(ctx, j)
}

func (c *countingJobs) CreateJob(ctx context.Context, j jobs.Job, lim jobs.Limits) (jobs.Job, error) {
	c.writes.Add(1)
	return c.Store.CreateJob(ctx, j, lim)
}

// TestJobPollsWriteNothing: 10,000 polls of a running job, and as many of
// a job id no one has, write nothing to the store and leave no memory
// behind them.
func TestJobPollsWriteNothing(t *testing.T) {
	st := memstore.New(session.Options{})
	t.Cleanup(func() { st.Close() })
	stub, _ := newStubDeps(t)
	d := stub.with(func(o *conversation.Options) { o.Remote = true })
	cj := &countingJobs{Store: jobs.Of(st)}
	d.Jobs = cj
	ctx := context.Background()
	j, err := jobs.New("tok", "chat", 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if j, err = st.CreateJob(ctx, j, jobs.Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, err = jobs.Update(ctx, st, "tok", j.ID, func(j *jobs.Job) (bool, error) { return true, j.Start(time.Now()) }); err != nil {
		t.Fatal(err)
	}
	req := request(t, "job", nil)
	poll := func(id string) {
		res, _, err := d.job(as("tok"), req, JobInput{JobID: id})
		if err != nil && !strings.Contains(err.Error(), "no such job") || err == nil && res.Meta["jobStatus"] != "working" {
			t.Fatalf("poll of %s: %v %+v", id, err, res)
		}
	}
	poll(j.ID)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10000 {
		poll(j.ID)
		poll("00000000-0000-4000-8000-000000000000")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := cj.writes.Load(); n != 0 {
		t.Errorf("20,000 polls wrote the store %d times", n)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Errorf("20,000 polls left %d bytes of heap", grew)
	}
}
