package memstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs/jobstest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestObservedJobsConformance: the jobs of a store seen through
// jobs.Observed (as the metrics see them) keep the promises of
// jobs.Store, and every operation is reported by name, its failures with
// their error.
func TestObservedJobsConformance(t *testing.T) {
	var mu sync.Mutex
	ops, failed := map[string]int{}, map[string]int{}
	jobstest.Run(t, func(t *testing.T) (jobs.Store, jobs.Store) {
		s := New(session.Options{})
		t.Cleanup(func() { s.Close() })
		o := jobs.Observed(jobs.Of(s), func(op string, d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			if d < 0 {
				t.Errorf("%s took %v", op, d)
			}
			ops[op]++
			if err != nil {
				failed[op]++
			}
		})
		return o, o
	})
	mu.Lock()
	defer mu.Unlock()
	for _, op := range []string{"CreateJob", "GetJob", "UpdateJob", "ListJobs", "FindJob", "WaitJob"} {
		if ops[op] == 0 {
			t.Errorf("%s was never reported", op)
		}
	}
	// The suite's refused creations (limits, bad input) and conflicting
	// updates fail.
	if failed["CreateJob"] == 0 || failed["UpdateJob"] == 0 {
		t.Errorf("failures reported: %v", failed)
	}
}

// TestObservedWaitStopped: a WaitJob whose caller stopped it (as a running
// job's watch is stopped at its end) is reported as a success; a failed
// CreateJob with its error.
func TestObservedWaitStopped(t *testing.T) {
	s := New(session.Options{})
	defer s.Close()
	var errs []error
	o := jobs.Observed(jobs.Of(s), func(_ string, _ time.Duration, err error) { errs = append(errs, err) })
	j, err := jobs.New("owner", "chat", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if j, err = o.CreateJob(t.Context(), j, jobs.Limits{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := o.WaitJob(ctx, "owner", j.ID, j.Version, time.Minute); err == nil {
		t.Fatal("a stopped wait returned no error")
	}
	if _, err := o.CreateJob(t.Context(), j, jobs.Limits{}); err == nil {
		t.Fatal("a job created twice")
	}
	if len(errs) != 3 || errs[0] != nil || errs[1] != nil || errs[2] == nil {
		t.Errorf("reported errors %v, want nil, nil (the stopped wait), the refusal", errs)
	}
}
