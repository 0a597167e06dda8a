package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// TestFailOrphaned: an orphaned job in a store fails with OrphanedError;
// a job of a live runner is returned unchanged.
func TestFailOrphaned(t *testing.T) {
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	st := jobs.Of(mem)
	me := jobs.Self()
	ctx := context.Background()
	now := time.Now()
	j, err := jobs.New("token:alice", "chat", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if j, err = st.CreateJob(ctx, j, jobs.Limits{}); err != nil {
		t.Fatal(err)
	}
	if j, err = jobs.Update(ctx, st, j.Owner, j.ID, func(j *jobs.Job) (bool, error) {
		j.Runner = &jobs.Runner{Node: me.Node, PID: me.PID, Run: "an earlier run"}
		return true, j.Start(now)
	}); err != nil {
		t.Fatal(err)
	}
	other := jobs.Runner{Node: me.Node, PID: me.PID + 1, Run: "another process"}
	alive := func(int) bool { return true }
	if got, err := jobs.FailOrphaned(ctx, st, j.Owner, j.ID, other, alive, now); err != nil || got.Status != jobs.Working || got.Version != j.Version {
		t.Fatalf("a job of a live runner: %+v %v", got, err)
	}
	got, err := jobs.FailOrphaned(ctx, st, j.Owner, j.ID, me, jobs.Alive, now.Add(time.Second))
	if err != nil || got.Status != jobs.Failed || got.Error != jobs.OrphanedError {
		t.Fatalf("an orphaned job: %s %q %v", got.Status, got.Error, err)
	}
}
