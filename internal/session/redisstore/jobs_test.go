package redisstore

import (
	"fmt"
	"sync/atomic"
	"testing"

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
