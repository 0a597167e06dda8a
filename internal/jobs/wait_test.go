package jobs

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestWait: a change made elsewhere is seen at the next poll, one made
// here (Notify) at once, and a wait without a change ends at its bound;
// no watch outlives its waiter.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n Notifier
		j := newJob(t)
		var version atomic.Int64
		version.Store(1)
		var asked atomic.Int64
		vers := func(context.Context) (int64, bool, error) {
			asked.Add(1)
			return version.Load(), true, nil
		}
		get := func(context.Context) (Job, bool, error) {
			j := j
			j.Version = version.Load()
			return j, true, nil
		}
		wait := func(max, every time.Duration) (Job, time.Duration) {
			start := time.Now()
			got, ok, err := Wait(t.Context(), &n, j.ID, 1, max, every, vers, get)
			if err != nil || !ok {
				t.Fatalf("Wait: %v, %v", ok, err)
			}
			return got, time.Since(start)
		}

		// Elsewhere: seen at the poll after the change.
		go func() {
			time.Sleep(600 * time.Millisecond)
			version.Store(2)
		}()
		if got, took := wait(time.Minute, 250*time.Millisecond); got.Version != 2 || took != 750*time.Millisecond {
			t.Fatalf("a change elsewhere after 600ms: version %d seen after %v, want 2 after 750ms", got.Version, took)
		}
		if asked.Load() != 4 {
			t.Fatalf("%d asks in 750ms at one per 250ms, want 4 (one at the start)", asked.Load())
		}

		// Here: seen at once, without polling.
		version.Store(1)
		go func() {
			time.Sleep(time.Second)
			version.Store(3)
			n.Notify(j.ID)
		}()
		if got, took := wait(time.Minute, 0); got.Version != 3 || took != time.Second {
			t.Fatalf("a change here after 1s: version %d seen after %v", got.Version, took)
		}

		// No change: the bound, capped at MaxWait.
		version.Store(1)
		if got, took := wait(5*time.Second, time.Second); got.Version != 1 || took != 5*time.Second {
			t.Fatalf("an unchanged job: version %d after %v", got.Version, took)
		}
		if _, took := wait(time.Hour, 0); took != MaxWait {
			t.Fatalf("a wait of an hour lasted %v, want MaxWait", took)
		}
		if n.Watching() != 0 {
			t.Fatalf("%d watches outlive their waiters", n.Watching())
		}
		if _, _, err := Wait(t.Context(), &n, j.ID, 1, -time.Second, 0, vers, get); err == nil {
			t.Fatal("a negative wait is no error")
		}
	})
}
