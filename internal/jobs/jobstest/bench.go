package jobstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// BenchOwners is how many callers the jobs of Fill belong to.
const BenchOwners = 100

// Fill stores n idle jobs in s, as a server with n jobs running would
// keep them: working, with a progress message and 1 KiB of partial
// output each, of BenchOwners owners. It returns them.
func Fill(b *testing.B, s jobs.Store, n int) []jobs.Job {
	ctx := context.Background()
	partial := strings.Repeat("The report so far, ", 54)[:1024]
	out := make([]jobs.Job, 0, n)
	lim := jobs.Limits{PerOwner: n, Total: n}
	for i := range n {
		now := time.Now()
		j, err := jobs.New(fmt.Sprint("token", i%BenchOwners), "research", time.Hour, now)
		if err == nil {
			j, err = s.CreateJob(ctx, j, lim)
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := j.Start(now); err != nil {
			b.Fatal(err)
		}
		_ = j.Report("searching: 12 of 40 sources read", 12, 40, now)
		_ = j.SetPartial(partial, now)
		if j, err = s.UpdateJob(ctx, j); err != nil {
			b.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// BenchPoll measures one poll of a job among those Fill stored: GetJob,
// and a WaitJob that finds the job changed since the caller's version
// (a version check, then the read).
func BenchPoll(b *testing.B, s jobs.Store, stored []jobs.Job) {
	ctx := context.Background()
	b.Run("get", func(b *testing.B) {
		i := 0
		for b.Loop() {
			j := stored[i%len(stored)]
			i++
			if got, ok, err := s.GetJob(ctx, j.Owner, j.ID); err != nil || !ok || got.Version != j.Version {
				b.Fatalf("GetJob: %v, %v", ok, err)
			}
		}
	})
	b.Run("wait-changed", func(b *testing.B) {
		i := 0
		for b.Loop() {
			j := stored[i%len(stored)]
			i++
			if got, ok, err := s.WaitJob(ctx, j.Owner, j.ID, j.Version-1, time.Minute); err != nil || !ok || got.Version != j.Version {
				b.Fatalf("WaitJob: %v, %v", ok, err)
			}
		}
	})
}

// ReportSize reports, as a benchmark of its own named name, what the
// jobs Fill stored cost: bytes in all, per job, in unit.
func ReportSize(b *testing.B, name string, bytes float64, jobs int, unit string) {
	b.Run(name, func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(bytes/float64(jobs), unit)
	})
}
