package jobstest

import (
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// find: a job whose resume handle is set on A is found by it on B, as
// its owner's only; not by another owner, not by a handle no job has
// (nor the empty one), not by its old handle once it has another, and
// not once it has expired.
func find(t *testing.T, open Open) {
	a, b := open(t)
	findOn := func(s jobs.Store, owner, resume string) (jobs.Job, bool) {
		t.Helper()
		j, ok, err := s.FindJob(ctxOf(t), owner, resume)
		if err != nil {
			t.Fatalf("FindJob(%q, %q): %v", owner, resume, err)
		}
		return j, ok
	}
	j := create(t, a, "alice", time.Hour, jobs.Limits{})
	create(t, a, "alice", time.Hour, jobs.Limits{})
	if _, ok := findOn(b, "alice", ""); ok {
		t.Fatal("FindJob found a job by the empty handle")
	}
	j = change(t, a, "alice", j.ID, func(j *jobs.Job) error {
		if err := j.Start(time.Now()); err != nil {
			return err
		}
		return j.SetResume("interaction-1", time.Now())
	})
	if got, ok := findOn(b, "alice", "interaction-1"); !ok || got.ID != j.ID || got.Version != j.Version || got.Resume != "interaction-1" {
		t.Fatalf("FindJob(alice, interaction-1) = %+v, %v; want job %s at version %d", got, ok, j.ID, j.Version)
	}
	for _, c := range []struct{ owner, resume string }{
		{"bob", "interaction-1"}, {"alice", "interaction-2"}, {"alic", "einteraction-1"}, {"alice:", "interaction-1"},
	} {
		if got, ok := findOn(b, c.owner, c.resume); ok {
			t.Fatalf("FindJob(%q, %q) found job %s", c.owner, c.resume, got.ID)
		}
	}
	// Alice's other job takes another handle; bob's job the same one.
	bobs := create(t, a, "bob", time.Hour, jobs.Limits{})
	change(t, a, "bob", bobs.ID, func(j *jobs.Job) error { return j.SetResume("interaction-1", time.Now()) })
	j = change(t, a, "alice", j.ID, func(j *jobs.Job) error { return j.SetResume("interaction-3", time.Now()) })
	if got, ok := findOn(b, "alice", "interaction-1"); ok {
		t.Fatalf("FindJob found job %s by the handle it had before", got.ID)
	}
	if got, ok := findOn(b, "alice", "interaction-3"); !ok || got.ID != j.ID {
		t.Fatalf("FindJob(alice, interaction-3) = %+v, %v", got, ok)
	}
	if got, ok := findOn(a, "bob", "interaction-1"); !ok || got.ID != bobs.ID {
		t.Fatalf("FindJob(bob, interaction-1) = %+v, %v", got, ok)
	}

	short := create(t, a, "carol", 300*time.Millisecond, jobs.Limits{})
	change(t, a, "carol", short.ID, func(j *jobs.Job) error { return j.SetResume("interaction-4", time.Now()) })
	poll(t, "carol's job to expire", func() (bool, error) {
		_, ok, err := b.FindJob(ctxOf(t), "carol", "interaction-4")
		return !ok, err
	})
}
