// Package queue provides a first-come, first-served semaphore whose waiters
// honour cancellation, and named locks built on it.
package queue

import (
	"context"
	"sync"
)

// Sem admits at most n holders at once; later arrivals wait in arrival
// order. Use NewSem.
type Sem struct {
	mu      sync.Mutex
	free    int
	waiters []chan struct{} // each closed when its slot is handed over
	// moved is closed (and replaced) whenever the line shortens, so that
	// waiters can report their place without polling.
	moved chan struct{}
}

// NewSem returns a semaphore with n slots (at least 1).
func NewSem(n int) *Sem {
	if n < 1 {
		n = 1
	}
	return &Sem{free: n, moved: make(chan struct{})}
}

// Acquire takes a slot, waiting in line for one if none is free. While it
// waits, onWait (if not nil) is called with the number of calls ahead of
// this one, first on joining the line and then each time that number
// changes. It returns the function that gives the slot back (safe to call
// more than once), or ctx's error if ctx ended first, in which case no slot
// is held.
func (s *Sem) Acquire(ctx context.Context, onWait func(ahead int)) (release func(), err error) {
	s.mu.Lock()
	if s.free > 0 && len(s.waiters) == 0 {
		s.free--
		s.mu.Unlock()
		return s.releaser(), nil
	}
	ready := make(chan struct{})
	s.waiters = append(s.waiters, ready)
	ahead := len(s.waiters) - 1
	moved := s.moved
	s.mu.Unlock()
	if onWait != nil {
		onWait(ahead)
	}
	for {
		select {
		case <-ready:
			return s.releaser(), nil
		case <-ctx.Done():
			s.mu.Lock()
			select {
			case <-ready:
				// The slot was handed over as ctx ended: pass it on.
				s.mu.Unlock()
				s.releaser()()
			default:
				s.remove(ready)
				s.mu.Unlock()
			}
			return nil, ctx.Err()
		case <-moved:
			s.mu.Lock()
			now := s.position(ready)
			moved = s.moved
			s.mu.Unlock()
			if now >= 0 && now != ahead {
				ahead = now
				if onWait != nil {
					onWait(ahead)
				}
			}
		}
	}
}

// Waiting returns how many calls are waiting for a slot.
func (s *Sem) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiters)
}

func (s *Sem) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.waiters) == 0 {
				s.free++
				return
			}
			close(s.waiters[0])
			s.waiters = s.waiters[1:]
			s.announce()
		})
	}
}

// remove drops a waiter from the line; s.mu must be held.
func (s *Sem) remove(ready chan struct{}) {
	for i, x := range s.waiters {
		if x == ready {
			s.waiters = append(s.waiters[:i:i], s.waiters[i+1:]...)
			s.announce()
			return
		}
	}
}

// announce wakes the waiters to re-read their place; s.mu must be held.
func (s *Sem) announce() {
	close(s.moved)
	s.moved = make(chan struct{})
}

// position is a waiter's place in line (0: next), or -1; s.mu must be held.
func (s *Sem) position(ready chan struct{}) int {
	for i, x := range s.waiters {
		if x == ready {
			return i
		}
	}
	return -1
}

// Locks are named first-come, first-served mutexes. A name's lock exists
// only while someone holds or waits for it.
type Locks struct {
	mu    sync.Mutex
	locks map[string]*named
}

type named struct {
	sem  *Sem
	refs int
}

// Lock takes the lock called name, waiting in arrival order behind earlier
// holders; onWait is as for Sem.Acquire. It returns the unlock function, or
// ctx's error.
func (l *Locks) Lock(ctx context.Context, name string, onWait func(ahead int)) (unlock func(), err error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*named{}
	}
	n := l.locks[name]
	if n == nil {
		n = &named{sem: NewSem(1)}
		l.locks[name] = n
	}
	n.refs++
	l.mu.Unlock()

	drop := func() {
		l.mu.Lock()
		if n.refs--; n.refs == 0 {
			delete(l.locks, name)
		}
		l.mu.Unlock()
	}
	release, err := n.sem.Acquire(ctx, onWait)
	if err != nil {
		drop()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			release()
			drop()
		})
	}, nil
}

// Len returns how many names are held or waited for.
func (l *Locks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}
