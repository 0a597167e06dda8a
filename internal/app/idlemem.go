package app

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// After a burst of calls the Go runtime keeps the heap it grew for a few
// minutes before its scavenger returns it, so a server that went quiet
// holds several MB it no longer uses. releaseWhenIdle returns it at once
// when the server has been quiet for a while: a check every idleCheck
// reads how much the server has allocated since the last one (a counter
// the runtime keeps anyway), and after a quiet interval it frees the
// memory once, until the next activity. Nothing runs on a call's path,
// and no memory limit makes the collector work harder during calls.
const (
	idleCheck = 30 * time.Second
	// idleAllocs is what an interval may allocate and still count as
	// quiet: the runtime's and the SDK's own housekeeping, not a call.
	idleAllocs = 256 << 10
)

// idleReleaser frees memory to the system after a quiet interval.
type idleReleaser struct {
	every   time.Duration
	quiet   uint64
	allocs  func() uint64 // bytes allocated so far
	release func()
}

func newIdleReleaser() *idleReleaser {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	return &idleReleaser{every: idleCheck, quiet: idleAllocs, release: debug.FreeOSMemory,
		allocs: func() uint64 {
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return 0
			}
			return sample[0].Value.Uint64()
		}}
}

// run checks until ctx ends.
func (r *idleReleaser) run(ctx context.Context) {
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	last, released := r.allocs(), false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := r.allocs()
		busy := now-last > r.quiet
		switch {
		case busy:
			released = false
		case !released:
			r.release()
			released = true
			now = r.allocs() // the release's own allocations are not activity
		}
		last = now
	}
}
