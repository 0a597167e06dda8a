package queue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond (for at most 5 s): the goroutines under test block on
// channels, and this only waits until they have reached that point.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestFIFOOrder(t *testing.T) {
	s := NewSem(1)
	release, err := s.Acquire(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Acquire(context.Background(), nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			r()
		}()
		// Each joins the line before the next starts.
		waitFor(t, "waiter to queue", func() bool { return s.Waiting() == i+1 })
	}
	release()
	wg.Wait()
	for i, v := range order {
		if v != i {
			t.Fatalf("order %v", order)
		}
	}
}

func TestLimitHolds(t *testing.T) {
	s := NewSem(3)
	var live, peak atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Acquire(context.Background(), nil)
			if err != nil {
				t.Error(err)
				return
			}
			n := live.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			live.Add(-1)
			r()
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > 3 || p < 1 {
		t.Fatalf("peak %d holders with 3 slots", p)
	}
	// All slots are back.
	for i := 0; i < 3; i++ {
		if _, err := s.Acquire(canceled(), nil); err != nil {
			t.Fatalf("slot %d not returned", i)
		}
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestCancelWhileWaiting(t *testing.T) {
	s := NewSem(1)
	release, _ := s.Acquire(context.Background(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	var positions []int
	go func() {
		_, err := s.Acquire(ctx, func(ahead int) { positions = append(positions, ahead) })
		got <- err
	}()
	waitFor(t, "waiter", func() bool { return s.Waiting() == 1 })
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if s.Waiting() != 0 || len(positions) != 1 || positions[0] != 0 {
		t.Fatalf("waiting %d, positions %v", s.Waiting(), positions)
	}
	release()
	// The cancelled waiter holds nothing: the slot is free.
	r, err := s.Acquire(canceled(), nil)
	if err != nil {
		t.Fatalf("slot lost: %v", err)
	}
	r()
	r() // a second release is harmless
	if s.free != 1 {
		t.Fatalf("free = %d after a double release", s.free)
	}
}

func TestPositionsReported(t *testing.T) {
	s := NewSem(1)
	release, _ := s.Acquire(context.Background(), nil)
	// Two waiters that hold the slot until told to let go.
	var lets []chan struct{}
	for i := 0; i < 2; i++ {
		let := make(chan struct{})
		lets = append(lets, let)
		go func() {
			r, _ := s.Acquire(context.Background(), nil)
			<-let
			r()
		}()
		waitFor(t, "waiters", func() bool { return s.Waiting() == i+1 })
	}
	var mu sync.Mutex
	var seen []int
	last := func() int {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return -1
		}
		return seen[len(seen)-1]
	}
	done := make(chan struct{})
	go func() {
		r, _ := s.Acquire(context.Background(), func(ahead int) { mu.Lock(); seen = append(seen, ahead); mu.Unlock() })
		r()
		close(done)
	}()
	waitFor(t, "third waiter at 2", func() bool { return last() == 2 })
	release()
	waitFor(t, "third waiter at 1", func() bool { return last() == 1 })
	close(lets[0])
	waitFor(t, "third waiter at 0", func() bool { return last() == 0 })
	close(lets[1])
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("positions %v, want [2 1 0]", seen)
	}
}

func TestLocks(t *testing.T) {
	var l Locks
	unlockA, err := l.Lock(context.Background(), "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Another name is not blocked.
	unlockB, err := l.Lock(canceled(), "b", nil)
	if err != nil {
		t.Fatal("b blocked by a")
	}
	unlockB()
	// The same name waits, and a cancelled wait leaves nothing behind.
	if _, err := l.Lock(canceled(), "a", nil); err == nil {
		t.Fatal("a taken twice")
	}
	got := make(chan struct{})
	go func() {
		u, err := l.Lock(context.Background(), "a", nil)
		if err == nil {
			u()
		}
		close(got)
	}()
	waitFor(t, "second holder to wait", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.locks["a"] != nil && l.locks["a"].refs == 2
	})
	unlockA()
	<-got
	unlockA()
	if l.Len() != 0 {
		t.Fatalf("%d names left", l.Len())
	}
}
