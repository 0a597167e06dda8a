package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

func (c *conformance) lease(t *testing.T, s session.Store, ctx context.Context, id string) func() {
	t.Helper()
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatalf("Lease(%s): %v", id, err)
	}
	return release
}

// waiter takes id's lease in a goroutine and reports on the returned
// channel whether the holder had let it go (released) by then.
func waiter(s session.Store, ctx context.Context, id string, released *atomic.Bool) <-chan error {
	done := make(chan error, 1)
	go func() {
		release, err := s.Lease(ctx, id)
		if err != nil {
			done <- err
			return
		}
		if !released.Load() {
			err = errors.New("a second Lease took the lease while its holder had it")
		}
		release()
		done <- err
	}()
	return done
}

func (c *conformance) leaseWaits(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	release := c.lease(t, s, ctx, idA)
	var released atomic.Bool
	done := waiter(s, ctx, idA, &released)
	// Another session's lease is free meanwhile; taking it gives the
	// waiter every chance to run.
	c.lease(t, s, ctx, idB)()
	released.Store(true)
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Free again.
	c.lease(t, s, ctx, idA)()
}

func (c *conformance) leaseOtherIDs(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	releaseA := c.lease(t, s, ctx, idA)
	defer releaseA()
	releaseB := c.lease(t, s, ctx, idB)
	defer releaseB()
	// Many sessions at once, from goroutines.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			release, err := s.Lease(ctx, uuid(i))
			if err != nil {
				errs <- err
				return
			}
			release()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func (c *conformance) leaseCancelled(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	release := c.lease(t, s, ctx, idA)
	// Already cancelled.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Lease(cctx, idA); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lease with a cancelled context on a held lease: %v, want context.Canceled", err)
	}
	// Cancelled while waiting.
	cctx, cancel = context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		rel, err := s.Lease(cctx, idA)
		if err == nil {
			rel()
		}
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lease cancelled while waiting: %v, want context.Canceled", err)
	}
	// A deadline.
	dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer dcancel()
	if _, err := s.Lease(dctx, idA); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lease past its deadline: %v, want context.DeadlineExceeded", err)
	}
	// The cancelled calls hold nothing: once the holder lets go, the lease
	// is free at once.
	release()
	c.lease(t, s, ctx, idA)()
}

func (c *conformance) leaseReleaseTwice(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	first := c.lease(t, s, ctx, idA)
	first()
	first()
	second := c.lease(t, s, ctx, idA)
	// The first holder's release, called again, must not free the second
	// holder's lease.
	first()
	var released atomic.Bool
	done := waiter(s, ctx, idA, &released)
	first()
	c.lease(t, s, ctx, idB)()
	released.Store(true)
	second()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func (c *conformance) leaseRenewed(t *testing.T) {
	opts := defaults
	// Long enough that a busy machine renews in time: a renewal comes
	// every third of it.
	opts.LeaseTTL = 1500 * time.Millisecond
	s, ctx := c.store(t, opts), ctxT(t)
	// The lease outlives the context it was taken with: it is the
	// holder's until released.
	lctx, cancel := context.WithCancel(ctx)
	start := time.Now()
	release := c.lease(t, s, lctx, idA)
	cancel()
	var released atomic.Bool
	done := waiter(s, ctx, idA, &released)
	// Hold it for two LeaseTTLs: renewals must keep it.
	tick := time.NewTicker(opts.LeaseTTL / 4)
	defer tick.Stop()
	for time.Since(start) < 2*opts.LeaseTTL {
		select {
		case err := <-done:
			t.Fatalf("a renewed lease was taken after %v (LeaseTTL %v): %v", time.Since(start), opts.LeaseTTL, err)
		case <-tick.C:
		}
	}
	released.Store(true)
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func (c *conformance) leaseClose(t *testing.T) {
	s, ctx := c.open(t, defaults), ctxT(t)
	release := c.lease(t, s, ctx, idA)
	// A Lease waiting when the store closes returns, with an error.
	done := make(chan error, 1)
	go func() {
		rel, err := s.Lease(ctx, idA)
		if err == nil {
			rel()
			err = errors.New("a Lease waiting on a held lease got it at Close")
		} else if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("a Lease waiting at Close did not return: %w", err)
		} else {
			err = nil
		}
		done <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Releasing after Close is harmless.
	release()
	release()
}
