package tools

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// TestJobOrphaned: a job left running by a process that stopped (no
// heartbeat for over jobs.StaleAfter) is reported, and stored, as failed
// with why; one with a recent heartbeat is still working; another
// token's job is unknown.
func TestJobOrphaned(t *testing.T) {
	t.Parallel()
	st := memstore.New(session.Options{})
	t.Cleanup(func() { st.Close() })
	stub, _ := newStubDeps(t)
	// Over HTTP, where a caller's token owns its jobs.
	d := stub.with(func(o *conversation.Options) { o.Remote = true })
	d.Jobs = jobs.Of(st)
	ctx := context.Background()
	running := func(at time.Time, r ...jobs.Runner) string {
		j, err := jobs.New("tok", "chat", 0, at)
		if err != nil {
			t.Fatal(err)
		}
		if j, err = st.CreateJob(ctx, j, jobs.Limits{}); err != nil {
			t.Fatal(err)
		}
		if _, err = jobs.Update(ctx, st, "tok", j.ID, func(j *jobs.Job) (bool, error) {
			if len(r) > 0 {
				j.Runner = &r[0]
			}
			return true, j.Start(at)
		}); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	orphan, live := running(time.Now().Add(-jobs.StaleAfter-time.Second)), running(time.Now())

	call := func(token, id string) string {
		t.Helper()
		res, _, err := d.job(as(token), request(t, "job", nil), JobInput{JobID: id})
		if err != nil {
			return "error: " + err.Error()
		}
		return res.Meta["jobStatus"].(string) + ": " + textOf(res)
	}
	if got := call("tok", orphan); !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, jobs.StaleError) {
		t.Errorf("the orphaned job: %s", got)
	}
	if j, _, _ := st.GetJob(ctx, "tok", orphan); j.Status != jobs.Failed {
		t.Errorf("the orphaned job is stored %s, want failed", j.Status)
	}
	if got := call("tok", live); !strings.HasPrefix(got, "working: ") {
		t.Errorf("the live job: %s", got)
	}
	if got := call("other", live); !strings.Contains(got, "no such job") {
		t.Errorf("another token's job: %s", got)
	}

	// A job of an earlier run of this process's pid (a server started
	// again, as pid 1 of its container is) fails at once; one of another
	// live process on this node is left to it.
	me := jobs.Self()
	earlier := running(time.Now(), jobs.Runner{Node: me.Node, PID: me.PID, Run: "an earlier run"})
	if got := call("tok", earlier); !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, jobs.OrphanedError) {
		t.Errorf("the job of an earlier run: %s", got)
	}
	replica := running(time.Now(), jobs.Runner{Node: me.Node, PID: os.Getppid(), Run: "another process"})
	if got := call("tok", replica); !strings.HasPrefix(got, "working: ") {
		t.Errorf("the job of a live process: %s", got)
	}
}

// TestJobPartial: the job tool shows a running job's output so far in
// its text, saying which part when not all of it is kept, and in
// _meta.partial; another token sees nothing of it.
func TestJobPartial(t *testing.T) {
	t.Parallel()
	st := memstore.New(session.Options{})
	t.Cleanup(func() { st.Close() })
	stub, _ := newStubDeps(t)
	d := stub.with(func(o *conversation.Options) { o.Remote = true })
	d.Jobs = jobs.Of(st)
	ctx := context.Background()
	j, err := jobs.New("tok", "chat", 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if j, err = st.CreateJob(ctx, j, jobs.Limits{}); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("a", 100) + strings.Repeat("b", jobs.MaxPartialTailBytes)
	if _, err = jobs.Update(ctx, st, "tok", j.ID, func(j *jobs.Job) (bool, error) {
		if err := j.Start(time.Now()); err != nil {
			return false, err
		}
		return true, j.SetPartialTail(text, time.Now())
	}); err != nil {
		t.Fatal(err)
	}
	res, _, err := d.job(as("tok"), request(t, "job", nil), JobInput{JobID: j.ID})
	if err != nil {
		t.Fatal(err)
	}
	tail := strings.Repeat("b", jobs.MaxPartialTailBytes)
	want := fmt.Sprintf("Output so far (its last %d bytes; the 100 before them are not shown):\n%s", jobs.MaxPartialTailBytes, tail)
	if got := textOf(res); !strings.HasSuffix(got, want) || res.IsError {
		t.Errorf("the job's text ends %q", got[max(0, len(got)-200):])
	}
	if res.Meta["partial"] != tail || res.Meta["partialDropped"] != 100 || res.Meta["partialTail"] != true {
		t.Errorf("_meta: partial of %d bytes, dropped %v, tail %v", len(fmt.Sprint(res.Meta["partial"])), res.Meta["partialDropped"], res.Meta["partialTail"])
	}
	if _, _, err := d.job(as("other"), request(t, "job", nil), JobInput{JobID: j.ID}); err == nil || !strings.Contains(err.Error(), "no such job") {
		t.Errorf("another token's poll: %v", err)
	}
}
