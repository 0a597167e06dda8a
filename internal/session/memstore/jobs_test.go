package memstore

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs/jobstest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestJobsConformance: the store in memory keeps the promises of
// jobs.Store; its two "replicas" are one store, as a process has one.
func TestJobsConformance(t *testing.T) {
	jobstest.Run(t, func(t *testing.T) (jobs.Store, jobs.Store) {
		s := New(session.Options{})
		t.Cleanup(func() { s.Close() })
		return s, s
	})
}

// TestJobTTL: a job lives exactly its TTL after its last change, a
// change restarts the clock, and a waiter is woken by a change at once
// (no polling: the bubble's clock does not move while it waits).
func TestJobTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(session.Options{})
		defer s.Close()
		ctx := t.Context()
		j, _ := jobs.New("alice", "chat", time.Minute, time.Now())
		j, err := s.CreateJob(ctx, j, jobs.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(59 * time.Second)
		woke := make(chan jobs.Job)
		go func() {
			got, _, _ := s.WaitJob(ctx, "alice", j.ID, 1, time.Hour)
			woke <- got
		}()
		synctest.Wait()
		start := time.Now()
		if j, err = jobs.Update(ctx, s, "alice", j.ID, func(j *jobs.Job) (bool, error) { return true, j.Start(time.Now()) }); err != nil {
			t.Fatal(err)
		}
		if got := <-woke; got.Status != jobs.Working || time.Since(start) != 0 {
			t.Fatalf("the waiter saw %s after %v", got.Status, time.Since(start))
		}
		time.Sleep(time.Minute - time.Nanosecond)
		if _, ok, _ := s.GetJob(ctx, "alice", j.ID); !ok {
			t.Fatal("the job expired before its TTL from its last change")
		}
		time.Sleep(time.Nanosecond)
		if _, ok, _ := s.GetJob(ctx, "alice", j.ID); ok {
			t.Fatal("the job outlived its TTL")
		}
		if s.jobs.notify.Watching() != 0 {
			t.Fatalf("%d watches outlive their waiters", s.jobs.notify.Watching())
		}
	})
}

// BenchmarkJobs measures a poll and the heap of 1,000 idle jobs.
func BenchmarkJobs(b *testing.B) {
	s := New(session.Options{})
	defer s.Close()
	before := heap()
	stored := jobstest.Fill(b, s, 1000)
	jobstest.ReportSize(b, "idle-1000", float64(heap()-before), 1000, "heap-B/job")
	jobstest.BenchPoll(b, s, stored)
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
