// Package jobstest is the conformance suite of jobs.Store: every store
// runs it from its own tests, with two clients of one store standing for
// two replicas (two processes sharing the embedded store's file, two
// servers sharing a Redis), so that a change made through one must be
// seen through the other.
//
// The suite never relies on the machine's speed: it waits on events (a
// WaitJob's return, a condition polled under a guard), and where time is
// the subject (TTL) asserts only what must hold whatever the delays.
package jobstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// guard bounds every wait for what must come: a failure guard only.
const guard = 30 * time.Second

// Open returns two clients of one new, empty store: a and b may be the
// same value for a store that lives in one process. The suite closes
// nothing: open registers its own cleanup.
type Open func(t *testing.T) (a, b jobs.Store)

// Run runs the suite on the stores open returns.
func Run(t *testing.T, open Open) {
	t.Run("Replicas", func(t *testing.T) { replicas(t, open) })
	t.Run("Result", func(t *testing.T) { result(t, open) })
	t.Run("Owners", func(t *testing.T) { owners(t, open) })
	t.Run("Conflict", func(t *testing.T) { conflict(t, open) })
	t.Run("ConcurrentUpdates", func(t *testing.T) { concurrentUpdates(t, open) })
	t.Run("Limits", func(t *testing.T) { limits(t, open) })
	t.Run("Expiry", func(t *testing.T) { expiry(t, open) })
	t.Run("WaitBounds", func(t *testing.T) { waitBounds(t, open) })
	t.Run("BadInput", func(t *testing.T) { badInput(t, open) })
	t.Run("List", func(t *testing.T) { list(t, open) })
	t.Run("Find", func(t *testing.T) { find(t, open) })
	t.Run("LargeResult", func(t *testing.T) { largeResult(t, open) })
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}

// create makes and stores a new job of owner.
func create(t *testing.T, s jobs.Store, owner string, ttl time.Duration, lim jobs.Limits) jobs.Job {
	t.Helper()
	j, err := jobs.New(owner, "chat", ttl, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	j, err = s.CreateJob(ctxOf(t), j, lim)
	if err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	if j.Version != 1 {
		t.Fatalf("a new job's version is %d, want 1", j.Version)
	}
	return j
}

// change applies f to owner's job through s, as a runner would.
func change(t *testing.T, s jobs.Store, owner, id string, f func(*jobs.Job) error) jobs.Job {
	t.Helper()
	j, err := jobs.Update(ctxOf(t), s, owner, id, func(j *jobs.Job) (bool, error) { return true, f(j) })
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return j
}

func get(t *testing.T, s jobs.Store, owner, id string) (jobs.Job, bool) {
	t.Helper()
	j, ok, err := s.GetJob(ctxOf(t), owner, id)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	return j, ok
}

// waitAsync starts a WaitJob on s and returns its answer's channel.
func waitAsync(t *testing.T, s jobs.Store, owner, id string, version int64) <-chan jobs.Job {
	ch := make(chan jobs.Job, 1)
	ctx := ctxOf(t)
	go func() {
		j, ok, err := s.WaitJob(ctx, owner, id, version, guard)
		if err != nil || !ok {
			t.Errorf("WaitJob: %v, ok %v", err, ok)
		}
		ch <- j
	}()
	return ch
}

// replicas: a job created on A is seen on B; B waiting sees A's progress;
// B's cancel is seen by A's runner, whose end B sees.
func replicas(t *testing.T, open Open) {
	a, b := open(t)
	j := create(t, a, "alice", time.Hour, jobs.Limits{})
	got, ok := get(t, b, "alice", j.ID)
	if !ok || got.Status != jobs.Queued || got.Tool != "chat" || got.Version != 1 {
		t.Fatalf("B sees %+v, %v; want alice's queued job at version 1", got, ok)
	}

	seen := waitAsync(t, b, "alice", j.ID, 1)
	change(t, a, "alice", j.ID, func(j *jobs.Job) error { return j.Start(time.Now()) })
	change(t, a, "alice", j.ID, func(j *jobs.Job) error { return j.Report("reading 3 sources", 1, 3, time.Now()) })
	got = <-seen
	if got.Version < 2 || got.Status != jobs.Working {
		t.Fatalf("B's wait returned %+v; want the job working, past version 1", got)
	}
	if got.Version == 2 { // woke at the first change: wait for the second
		got = <-waitAsync(t, b, "alice", j.ID, 2)
	}
	if got.Message != "reading 3 sources" || got.Progress != 1 || got.Total != 3 {
		t.Fatalf("B sees progress %q %v/%v, want A's", got.Message, got.Progress, got.Total)
	}

	cancelSeen := waitAsync(t, a, "alice", j.ID, got.Version)
	if _, err := jobs.Cancel(ctxOf(t), b, "alice", j.ID, time.Now()); err != nil {
		t.Fatalf("Cancel on B: %v", err)
	}
	onA := <-cancelSeen
	if !onA.CancelRequested || onA.Status != jobs.Working {
		t.Fatalf("A's runner sees %+v; want the cancel requested of its working job", onA)
	}
	done := waitAsync(t, b, "alice", j.ID, onA.Version)
	change(t, a, "alice", j.ID, func(j *jobs.Job) error { return j.Cancelled(time.Now()) })
	if got := <-done; got.Status != jobs.Cancelled {
		t.Fatalf("B sees %s after A's runner stopped, want cancelled", got.Status)
	}
	// A finished job's cancel changes nothing.
	before, _ := get(t, a, "alice", j.ID)
	after, err := jobs.Cancel(ctxOf(t), b, "alice", j.ID, time.Now())
	if err != nil || after.Version != before.Version {
		t.Fatalf("cancelling a cancelled job: %v, version %d → %d", err, before.Version, after.Version)
	}
}

// result: the result a completed job keeps is the call's, byte for byte
// as JSON, on the other replica; partial output and the resume handle
// travel too.
func result(t *testing.T, open Open) {
	a, b := open(t)
	j := create(t, a, "", time.Hour, jobs.Limits{})
	change(t, a, "", j.ID, func(j *jobs.Job) error {
		if err := j.Start(time.Now()); err != nil {
			return err
		}
		if err := j.SetResume("interactions/abc123", time.Now()); err != nil {
			return err
		}
		return j.SetPartial("The report so far: ¶", time.Now())
	})
	mid, _ := get(t, b, "", j.ID)
	if mid.Partial != "The report so far: ¶" || mid.Resume != "interactions/abc123" {
		t.Fatalf("B sees partial %q and resume %q", mid.Partial, mid.Resume)
	}
	long := "é" + strings.Repeat("x", jobs.MaxPartialTailBytes)
	change(t, a, "", j.ID, func(j *jobs.Job) error { return j.SetPartialTail(long, time.Now()) })
	if mid, _ = get(t, b, "", j.ID); mid.Partial != long[2:] || mid.PartialDropped != 2 || !mid.PartialTail {
		t.Fatalf("B sees a live output of %d bytes, %d dropped, tail %v", len(mid.Partial), mid.PartialDropped, mid.PartialTail)
	}
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "the report ✓"}, &mcp.ResourceLink{URI: "https://example.com/a", Name: "source 1"}},
		StructuredContent: map[string]any{"answer": "the report ✓", "sources": []any{"https://example.com/a"}},
	}
	change(t, a, "", j.ID, func(j *jobs.Job) error { return j.Complete(res, time.Now()) })
	done, _ := get(t, b, "", j.ID)
	back, err := done.CallToolResult()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(res)
	have, _ := json.Marshal(back)
	if string(want) != string(have) || done.Status != jobs.Completed || done.Partial != "" {
		t.Fatalf("B's result %s (%s, partial %q), want %s", have, done.Status, done.Partial, want)
	}
}

// owners: another owner cannot get, list, wait on, update or cancel a
// job, and learns nothing of it (not found, as for no job at all).
func owners(t *testing.T, open Open) {
	a, b := open(t)
	j := create(t, a, "token:alice", time.Hour, jobs.Limits{})
	ctx := ctxOf(t)
	if _, ok := get(t, b, "token:bob", j.ID); ok {
		t.Error("bob gets alice's job")
	}
	if _, ok := get(t, b, "", j.ID); ok {
		t.Error("the owner \"\" gets alice's job")
	}
	if l, err := b.ListJobs(ctx, "token:bob", 10); err != nil || len(l) != 0 {
		t.Errorf("bob lists %d jobs, %v; want none", len(l), err)
	}
	if _, err := jobs.Cancel(ctx, b, "token:bob", j.ID, time.Now()); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("bob cancels alice's job: %v, want not found", err)
	}
	stolen := j
	stolen.Owner = "token:bob"
	if _, err := b.UpdateJob(ctx, stolen); !errors.Is(err, jobs.ErrNotFound) {
		t.Errorf("bob updates alice's job: %v, want not found", err)
	}
	if _, ok, err := b.WaitJob(ctx, "token:bob", j.ID, 1, guard); ok || err != nil {
		t.Errorf("bob waits on alice's job: ok %v, %v; want at once not found", ok, err)
	}
	unknown := jobs.NotFound(j.ID)
	if _, err := jobs.Cancel(ctx, b, "token:bob", j.ID, time.Now()); err == nil || err.Error() != unknown.Error() {
		t.Errorf("bob's cancel says %v, not what a job that does not exist says (%v)", err, unknown)
	}
	got, ok := get(t, a, "token:alice", j.ID)
	if !ok || got.Version != 1 || got.CancelRequested || got.Status != jobs.Queued {
		t.Fatalf("alice's job after bob's tries: %+v, %v; want it untouched", got, ok)
	}
	if l, err := a.ListJobs(ctx, "token:alice", 10); err != nil || len(l) != 1 || l[0].ID != j.ID {
		t.Fatalf("alice lists %v, %v", l, err)
	}
}

// conflict: of two updates from one version, the second is refused and
// the first kept.
func conflict(t *testing.T, open Open) {
	a, b := open(t)
	j := create(t, a, "alice", time.Hour, jobs.Limits{})
	one, two := j, j
	if err := one.Start(time.Now()); err != nil {
		t.Fatal(err)
	}
	two.RequestCancel(time.Now())
	if _, err := a.UpdateJob(ctxOf(t), one); err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateJob(ctxOf(t), two); !errors.Is(err, jobs.ErrConflict) {
		t.Fatalf("the second update from version 1: %v, want a conflict", err)
	}
	got, _ := get(t, b, "alice", j.ID)
	if got.Status != jobs.Working || got.CancelRequested || got.Version != 2 {
		t.Fatalf("after the conflict: %+v; want the first update's", got)
	}
}

// concurrentUpdates: updates racing on two replicas are all kept.
func concurrentUpdates(t *testing.T, open Open) {
	a, b := open(t)
	j := create(t, a, "alice", time.Hour, jobs.Limits{})
	change(t, a, "alice", j.ID, func(j *jobs.Job) error { return j.Start(time.Now()) })
	const each = 10
	var wg sync.WaitGroup
	for _, s := range []jobs.Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := jobs.Update(ctxOf(t), s, "alice", j.ID, func(j *jobs.Job) (bool, error) {
					return true, j.Report("step", j.Progress+1, 0, time.Now())
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, _ := get(t, a, "alice", j.ID)
	if got.Progress != 4*each || got.Version != 2+4*each {
		t.Fatalf("after %d racing updates: progress %v, version %d", 4*each, got.Progress, got.Version)
	}
}

// limits: live jobs are bounded per owner and in total; a finished job
// frees its place.
func limits(t *testing.T, open Open) {
	a, b := open(t)
	lim := jobs.Limits{PerOwner: 2, Total: 3}
	first := create(t, a, "alice", time.Hour, lim)
	create(t, b, "alice", time.Hour, lim)
	refused := func(s jobs.Store, owner string, want error) {
		t.Helper()
		j, err := jobs.New(owner, "chat", time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.CreateJob(ctxOf(t), j, lim)
		if !errors.Is(err, jobs.ErrLimit) || err.Error() != want.Error() {
			t.Fatalf("a job over the limit: %v, want %v", err, want)
		}
		if _, ok := get(t, s, owner, j.ID); ok {
			t.Fatal("a refused job was stored")
		}
	}
	refused(b, "alice", jobs.OwnerLimitError(lim))
	create(t, a, "bob", time.Hour, lim)
	refused(a, "carol", jobs.TotalLimitError(lim))
	change(t, b, "alice", first.ID, func(j *jobs.Job) error { return j.Fail("it broke", time.Now()) })
	create(t, b, "alice", time.Hour, lim)
	refused(a, "alice", jobs.OwnerLimitError(lim))

	// Racing creates on two replicas pass no limit.
	a2, b2 := open(t)
	lim = jobs.Limits{PerOwner: 5, Total: 100}
	var wg sync.WaitGroup
	var mu sync.Mutex
	made := 0
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a2
			if i%2 == 1 {
				s = b2
			}
			j, _ := jobs.New("dave", "chat", time.Hour, time.Now())
			_, err := s.CreateJob(ctxOf(t), j, lim)
			if err != nil && !errors.Is(err, jobs.ErrLimit) {
				t.Error(err)
			}
			if err == nil {
				mu.Lock()
				made++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if made != 5 {
		t.Fatalf("12 racing creates under a limit of 5 made %d", made)
	}
}

// expiry: a job is gone after its TTL from its last change, and an
// expired live job no longer counts against the limits.
func expiry(t *testing.T, open Open) {
	a, b := open(t)
	const ttl = 300 * time.Millisecond
	lim := jobs.Limits{PerOwner: 1, Total: 10}
	short := create(t, a, "alice", ttl, lim)
	long := create(t, a, "bob", time.Hour, lim)
	poll(t, "alice's job to expire", func() (bool, error) {
		_, ok, err := b.GetJob(ctxOf(t), "alice", short.ID)
		return !ok, err
	})
	if l, err := b.ListJobs(ctxOf(t), "alice", 10); err != nil || len(l) != 0 {
		t.Fatalf("alice lists %d jobs after expiry, %v", len(l), err)
	}
	stale := short
	if _, err := a.UpdateJob(ctxOf(t), stale); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("updating an expired job: %v, want not found", err)
	}
	create(t, b, "alice", time.Hour, lim)
	if _, ok := get(t, b, "bob", long.ID); !ok {
		t.Fatal("bob's job of an hour expired")
	}
}

// waitBounds: a wait ends unchanged after its bound, at once for a job
// unknown, with the context's error when it ends.
func waitBounds(t *testing.T, open Open) {
	a, _ := open(t)
	j := create(t, a, "alice", time.Hour, jobs.Limits{})
	got, ok, err := a.WaitJob(ctxOf(t), "alice", j.ID, 1, 50*time.Millisecond)
	if err != nil || !ok || got.Version != 1 {
		t.Fatalf("a bounded wait: %+v, %v, %v; want the job unchanged", got, ok, err)
	}
	if got, ok, err := a.WaitJob(ctxOf(t), "alice", j.ID, 7, guard); err != nil || !ok || got.Version != 1 {
		t.Fatalf("a wait from another version: %v %v %v; want the job at once", got.Version, ok, err)
	}
	other, _ := jobs.New("alice", "chat", time.Hour, time.Now())
	if _, ok, err := a.WaitJob(ctxOf(t), "alice", other.ID, 1, guard); ok || err != nil {
		t.Fatalf("a wait on no job: ok %v, %v", ok, err)
	}
	ctx, cancel := context.WithCancel(ctxOf(t))
	errc := make(chan error, 1)
	go func() {
		_, _, err := a.WaitJob(ctx, "alice", j.ID, 1, guard)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
}

// badInput: malformed ids and records are refused and change nothing.
func badInput(t *testing.T, open Open) {
	a, _ := open(t)
	ctx := ctxOf(t)
	for _, id := range []string{"", "x", "A0000000-0000-4000-8000-000000000000", "../../etc"} {
		if _, _, err := a.GetJob(ctx, "alice", id); err == nil {
			t.Errorf("GetJob(%q) is no error", id)
		}
		if _, _, err := a.WaitJob(ctx, "alice", id, 1, time.Second); err == nil {
			t.Errorf("WaitJob(%q) is no error", id)
		}
	}
	j := create(t, a, "alice", time.Hour, jobs.Limits{})
	if _, err := a.CreateJob(ctx, withVersion(j, 0), jobs.Limits{}); err == nil {
		t.Error("a second job of the same id was stored")
	}
	if _, err := a.CreateJob(ctx, j, jobs.Limits{}); err == nil {
		t.Error("a job of version 1 was created")
	}
	bad := j
	bad.Status = "done"
	if _, err := a.UpdateJob(ctx, bad); err == nil {
		t.Error("an unknown status was stored")
	}
	bad = j
	bad.Result = json.RawMessage(`{}`)
	if _, err := a.UpdateJob(ctx, bad); err == nil {
		t.Error("a result of a queued job was stored")
	}
	if got, _ := get(t, a, "alice", j.ID); got.Version != 1 || got.Status != jobs.Queued {
		t.Fatalf("after refused updates: %+v", got)
	}
	if _, err := a.ListJobs(ctx, "alice", -1); err == nil {
		t.Error("a negative list limit is no error")
	}
}

func withVersion(j jobs.Job, v int64) jobs.Job { j.Version = v; return j }

// list: an owner's jobs, the most recently changed first, up to a limit.
func list(t *testing.T, open Open) {
	a, b := open(t)
	one := create(t, a, "alice", time.Hour, jobs.Limits{})
	two := create(t, a, "alice", time.Hour, jobs.Limits{})
	create(t, a, "bob", time.Hour, jobs.Limits{})
	ids := func(limit int) []string {
		l, err := b.ListJobs(ctxOf(t), "alice", limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range l {
			if j.Owner != "alice" {
				t.Fatalf("alice lists %s's job", j.Owner)
			}
			out = append(out, j.ID)
		}
		return out
	}
	// The stores order by expiry, kept to the millisecond: change the
	// first job a clear millisecond later.
	later := time.Now().Add(10 * time.Millisecond)
	change(t, a, "alice", one.ID, func(j *jobs.Job) error { return j.Start(later) })
	if got := ids(10); fmt.Sprint(got) != fmt.Sprint([]string{one.ID, two.ID}) {
		t.Fatalf("alice lists %v, want %v", got, []string{one.ID, two.ID})
	}
	if got := ids(1); len(got) != 1 || got[0] != one.ID {
		t.Fatalf("alice lists %v with limit 1", got)
	}
	if got := ids(0); len(got) != 0 {
		t.Fatalf("alice lists %v with limit 0", got)
	}
}

// poll asks done until it says so, under the guard.
func poll(t *testing.T, what string, done func() (bool, error)) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(guard)
	var last error
	for {
		ok, err := done()
		if ok {
			return
		}
		last = err
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("waiting for %s: no sign after %v (last error: %v)", what, guard, last)
		}
	}
}
