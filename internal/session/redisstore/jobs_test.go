package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs/jobstest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestJobsConformance: two stores on one Redis stand for two replicas.
func TestJobsConformance(t *testing.T) {
	srv := redistest.Start(t)
	runJobs(t, srv.URL(0))
}

// TestJobsConformanceCluster: the same on a cluster of three masters,
// where every script must find its keys on one slot.
func TestJobsConformanceCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	runJobs(t, c.URL())
}

// runJobs runs the suite on the Redis at url, each test's pair of stores
// under a prefix of its own, so that each starts empty.
func runJobs(t *testing.T, url string) {
	var n atomic.Int64
	jobstest.Run(t, func(t *testing.T) (jobs.Store, jobs.Store) {
		opts := session.Options{Prefix: fmt.Sprintf("jobs%d:", n.Add(1))}
		var pair [2]jobs.Store
		for i := range pair {
			s, err := Open(t.Context(), url, opts)
			if err != nil {
				t.Fatalf("Open %s: %v", url, err)
			}
			t.Cleanup(func() { s.Close() })
			pair[i] = s
		}
		return pair[0], pair[1]
	})
}

// BenchmarkJobs measures a poll of a job among 1,000 idle ones (its time
// and the commands Redis runs for it: each command of a poll is a round
// trip), and the memory those jobs take in Redis.
func BenchmarkJobs(b *testing.B) {
	srv := redistest.Start(b)
	s, err := Open(context.Background(), srv.URL(0), session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := plainB(b, srv)
	info := func(section, field string) float64 {
		text, err := c.Info(context.Background(), section).Result()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.SplitSeq(text, "\r\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				return n
			}
		}
		b.Fatalf("no %s in INFO %s", field, section)
		return 0
	}
	before := info("memory", "used_memory")
	stored := jobstest.Fill(b, s, 1000)
	jobstest.ReportSize(b, "idle-1000", info("memory", "used_memory")-before, 1000, "redis-B/job")
	ctx := context.Background()
	for name, poll := range map[string]func(j jobs.Job) error{
		"get": func(j jobs.Job) error { _, _, err := s.GetJob(ctx, j.Owner, j.ID); return err },
		"wait-changed": func(j jobs.Job) error {
			_, _, err := s.WaitJob(ctx, j.Owner, j.ID, j.Version-1, time.Minute)
			return err
		},
	} {
		b.Run(name, func(b *testing.B) {
			// INFO itself counts as a command, once per measure.
			cmds := info("stats", "total_commands_processed")
			i := 0
			for b.Loop() {
				if err := poll(stored[i%len(stored)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric((info("stats", "total_commands_processed")-cmds-1)/float64(i), "cmds/op")
		})
	}
}

// TestJobsLeaveNoKeys: once its jobs have expired, no key of theirs is
// left in Redis, the sets of live jobs and of the owner's and the entry
// of a resume handle included.
func TestJobsLeaveNoKeys(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	c := plainB(t, srv)
	ctx := t.Context()
	for _, finish := range []bool{false, true} {
		j, _ := jobs.New("token:alice", "chat", 200*time.Millisecond, time.Now())
		j, err := s.CreateJob(ctx, j, jobs.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if finish {
			if err := j.SetResume("interaction-1", time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := j.Fail("it broke", time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := s.UpdateJob(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
	}
	if keys, err := c.Keys(ctx, "*{jobs}*").Result(); err != nil || len(keys) != 6 {
		t.Fatalf("keys of two jobs: %q, %v; want the two jobs, the two sets of live jobs, the owner's index and the resume handle's entry", keys, err)
	}
	guard := geminitest.Context(t)
	err := geminitest.Poll(guard, "the jobs' keys to expire", func() (bool, error) {
		keys, err := c.Keys(ctx, "*{jobs}*").Result()
		return err == nil && len(keys) == 0, fmt.Errorf("keys %q, %v", keys, err) //nolint:errorlint // err may be nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestJobsSurviveRestart: a job a store wrote is whole in a store opened
// later, as after a restart of the server.
func TestJobsSurviveRestart(t *testing.T) {
	srv := redistest.Start(t)
	a := open(t, srv, session.Options{})
	j, _ := jobs.New("token:alice", "research", time.Hour, time.Now())
	j, err := a.CreateJob(t.Context(), j, jobs.Limits{})
	if err == nil {
		_ = j.Start(time.Now())
		_ = j.SetResume("interaction-1", time.Now())
		j, err = a.UpdateJob(t.Context(), j)
	}
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b := open(t, srv, session.Options{})
	got, ok, err := b.GetJob(t.Context(), "token:alice", j.ID)
	if err != nil || !ok || got.Resume != "interaction-1" || got.Version != j.Version || got.Status != jobs.Working {
		t.Fatalf("after a restart: %+v, %v, %v", got, ok, err)
	}
}

// TestJobsRedisDown: with Redis gone, every job call fails at once with
// the store's unavailable error, a system failure and not the caller's.
func TestJobsRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	ctx := geminitest.Context(t)
	j, _ := jobs.New("token:alice", "chat", time.Hour, time.Now())
	j, err := s.CreateJob(ctx, j, jobs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	fresh, _ := jobs.New("token:alice", "chat", time.Hour, time.Now())
	calls := map[string]func() error{
		"CreateJob": func() error { _, err := s.CreateJob(ctx, fresh, jobs.Limits{}); return err },
		"GetJob":    func() error { _, _, err := s.GetJob(ctx, j.Owner, j.ID); return err },
		"UpdateJob": func() error { _, err := s.UpdateJob(ctx, j); return err },
		"ListJobs":  func() error { _, err := s.ListJobs(ctx, j.Owner, 10); return err },
		"FindJob":   func() error { _, _, err := s.FindJob(ctx, j.Owner, "interaction-1"); return err },
		"WaitJob":   func() error { _, _, err := s.WaitJob(ctx, j.Owner, j.ID, j.Version, time.Minute); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, session.ErrUnavailable) {
			t.Errorf("%s with Redis down: %v, want the store unavailable", name, err)
		}
	}
}
