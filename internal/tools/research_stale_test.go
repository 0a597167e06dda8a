package tools

import (
	"slices"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// TestStaleResearchCancelled: the cancel of a research job whose server
// stopped (its heartbeat stale) ends the job cancelled and cancels its
// interaction at the API, which would otherwise run on, billed, for
// nobody; so does a poll of one whose cancel was asked before its server
// stopped, rather than resuming it to run to its end.
func TestStaleResearchCancelled(t *testing.T) {
	t.Parallel()
	for _, askedBefore := range []bool{false, true} {
		staleResearchCancelled(t, askedBefore)
	}
}

func staleResearchCancelled(t *testing.T, askedBefore bool) {
	d, fake := researchDeps(t)
	rs, err := d.Research()
	if err != nil {
		t.Fatal(err)
	}
	ctx := geminitest.Context(t)
	first, err := rs.StartAgent(ctx, interact.AgentRequest{Input: "left behind [[hold]]"})
	if err != nil {
		t.Fatal(err)
	}
	j := staleResearchJob(t, d, first.ID, func(j *jobs.Job, past time.Time) error {
		if askedBefore {
			j.RequestCancel(past)
		}
		return nil
	})
	res, _, err := d.job(as("tok"), request(t, "job", nil), JobInput{JobID: j.ID, Cancel: !askedBefore})
	if err != nil {
		t.Fatal(err)
	}
	if res.Meta["jobStatus"] != "cancelled" {
		t.Fatalf("asked before %v: the stale research job after its cancel: %s %+v", askedBefore, textOf(res), res.Meta)
	}
	res, err = jobEnd(t, d, "tok", j.ID)
	if err != nil || res.Meta["jobStatus"] != "cancelled" {
		t.Fatalf("the stale research job after its cancel: %v %s %+v", err, textOf(res), res.Meta)
	}
	err = fake.WaitFor(ctx, func(reqs []fakeapi.Request) bool {
		return slices.ContainsFunc(reqs, func(r fakeapi.Request) bool { return r.Method == fakeapi.MethodInteractionCancel })
	})
	if err != nil {
		t.Fatalf("the interaction was not cancelled: %v", err)
	}
}

// staleResearchJob stores a research job of "tok" following interaction,
// started and last changed long enough ago to be stale (its process gone),
// with whatever also sets on it then.
func staleResearchJob(t *testing.T, d *Deps, interaction string, also func(j *jobs.Job, past time.Time) error) jobs.Job {
	t.Helper()
	ctx := geminitest.Context(t)
	past := time.Now().Add(-jobs.StaleAfter - time.Second)
	j, err := jobs.New("tok", "research", 0, past)
	if err != nil {
		t.Fatal(err)
	}
	if j, err = d.Jobs.CreateJob(ctx, j, jobs.Limits{}); err != nil {
		t.Fatal(err)
	}
	if j, err = jobs.Update(ctx, d.Jobs, "tok", j.ID, func(j *jobs.Job) (bool, error) {
		if err := j.Start(past); err != nil {
			return false, err
		}
		if err := j.SetResume(interaction, past); err != nil {
			return false, err
		}
		return true, also(j, past)
	}); err != nil {
		t.Fatal(err)
	}
	return j
}
