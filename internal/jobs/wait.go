package jobs

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MaxWait bounds one WaitJob: a caller waiting longer asks again.
const MaxWait = 10 * time.Minute

// PollEvery is how often a shared store (embedded, Redis) asks for the
// version of a job that a waiter watches, for changes made by another
// process: a change made through the same store value wakes its waiters
// at once. One ask is one read of two small fields (one round trip to
// Redis, one indexed row of SQLite), so a waiter costs four a second.
const PollEvery = 250 * time.Millisecond

// Notifier wakes the waiters of a job when this process changes it. The
// zero Notifier is ready to use.
type Notifier struct {
	mu sync.Mutex
	w  map[string]*watch
}

type watch struct {
	ch   chan struct{}
	refs int
}

// Watch returns a channel closed at the next Notify of id, and a release
// to call when no longer waiting.
func (n *Notifier) Watch(id string) (<-chan struct{}, func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.w == nil {
		n.w = map[string]*watch{}
	}
	w := n.w[id]
	if w == nil {
		w = &watch{ch: make(chan struct{})}
		n.w[id] = w
	}
	w.refs++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if w.refs--; w.refs == 0 && n.w[id] == w {
				delete(n.w, id)
			}
		})
	}
}

// Notify wakes the waiters of id.
func (n *Notifier) Notify(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w := n.w[id]; w != nil {
		close(w.ch)
		delete(n.w, id)
	}
}

// Watching returns how many jobs have waiters, for tests.
func (n *Notifier) Watching() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.w)
}

// Wait is WaitJob for the stores: it asks version for the job's version
// (ok false when the job is gone) on every Notify of id and every every
// (0: only on Notify), until it differs from v, then returns the job that
// get reads. It returns the unchanged job after max (at most MaxWait).
func Wait(ctx context.Context, n *Notifier, id string, v int64, max, every time.Duration,
	version func(context.Context) (int64, bool, error), get func(context.Context) (Job, bool, error)) (Job, bool, error) {
	if err := CheckID(id); err != nil {
		return Job{}, false, err
	}
	if max < 0 {
		return Job{}, false, fmt.Errorf("job %s: a wait of %v is negative", id, max)
	}
	max = min(max, MaxWait)
	timeout := time.NewTimer(max)
	defer timeout.Stop()
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		changed, release := n.Watch(id)
		now, ok, err := version(ctx)
		if err != nil || !ok || now != v {
			release()
			if err != nil || !ok {
				return Job{}, false, err
			}
			return get(ctx)
		}
		select {
		case <-changed:
		case <-tick:
		case <-timeout.C:
			release()
			return get(ctx)
		case <-ctx.Done():
			release()
			return Job{}, false, fmt.Errorf("waiting for job %s: %w", id, ctx.Err())
		}
		release()
	}
}
