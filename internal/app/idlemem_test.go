package app

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestIdleReleaser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var allocated, released atomic.Uint64
		r := &idleReleaser{every: time.Minute, quiet: 1000,
			allocs:  allocated.Load,
			release: func() { released.Add(1) }}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.run(ctx)
		}()
		synctest.Wait() // run has read the counter and waits for its first tick
		step := func(alloc uint64) uint64 {
			allocated.Add(alloc)
			time.Sleep(time.Minute)
			synctest.Wait()
			return released.Load()
		}
		// Busy intervals release nothing.
		if n := step(1 << 20); n != 0 {
			t.Fatalf("released %d times while busy", n)
		}
		// The first quiet interval releases once; more quiet, no more.
		if n := step(10); n != 1 {
			t.Fatalf("released %d times after a quiet interval", n)
		}
		if n := step(0); n != 1 {
			t.Fatalf("released %d times while staying quiet", n)
		}
		// Activity, then quiet again: one more release.
		step(1 << 20)
		if n := step(0); n != 2 {
			t.Fatalf("released %d times after the second quiet interval", n)
		}
		cancel()
		<-done
	})
}
