package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// lease is one held lease.
type lease struct {
	s     *Store
	id    string
	token string
	stop  chan struct{} // closed to stop the renewal
	once  sync.Once
}

// Lua for leases: each compares the holder's token before acting, so that
// a holder whose lease expired (and was taken by another) cannot renew or
// release the new holder's.
var (
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)
)

// Lease takes session id's lease: SET NX with a random token and the
// lease TTL, renewed by a goroutine every third of the TTL while held. A
// waiter is woken at once when a holder in this process releases; a
// holder in another process is watched for with tries a short, capped
// backoff apart (its release, or the expiry of a dead holder's lease).
func (s *Store) Lease(ctx context.Context, id string) (func(), error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:]) // crypto/rand.Read never fails on supported platforms
	token := hex.EncodeToString(tok[:])
	wait := s.minWait
	for {
		// Take the wake-up channel before trying, so that a release
		// between the try and the wait is not missed.
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("session store: closed")
		}
		wake, ok := s.wake[id]
		if !ok {
			wake = make(chan struct{})
			s.wake[id] = wake
		}
		s.mu.Unlock()

		ok, err := s.rdb.SetNX(ctx, s.leaseKey(id), token, s.opts.LeaseTTL).Result()
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		if ok {
			return s.hold(id, token)
		}
		if s.onWait != nil {
			s.onWait()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-s.done:
			t.Stop()
			return nil, errors.New("session store: closed")
		case <-wake:
			wait = s.minWait
		case <-t.C:
			wait = min(2*wait, s.maxWait)
		}
		t.Stop()
	}
}

// hold starts renewing a lease just taken and returns its release.
func (s *Store) hold(id, token string) (func(), error) {
	l := &lease{s: s, id: id, token: token, stop: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.giveBack()
		return nil, errors.New("session store: closed")
	}
	s.held[l] = struct{}{}
	s.renewal.Add(1)
	s.mu.Unlock()
	go l.renew()
	return l.release, nil
}

// renew extends the lease every third of its TTL until released. A renewal
// that fails (Redis away for a moment) is tried again at the next tick; a
// lease found taken by another (it expired meanwhile) is not renewed.
func (l *lease) renew() {
	defer l.s.renewal.Done()
	every := l.s.opts.LeaseTTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		n, err := renewScript.Run(ctx, l.s.rdb, []string{l.s.leaseKey(l.id)}, l.token, l.s.opts.LeaseTTL.Milliseconds()).Int()
		cancel()
		if err == nil && n == 0 {
			return
		}
	}
}

// release stops the renewal, gives the lease back and wakes this process's
// waiters for it. Later calls do nothing.
func (l *lease) release() {
	l.once.Do(func() {
		close(l.stop)
		l.giveBack()
		s := l.s
		s.mu.Lock()
		delete(s.held, l)
		if w, ok := s.wake[l.id]; ok {
			close(w)
			delete(s.wake, l.id)
		}
		s.mu.Unlock()
	})
}

// giveBack deletes the lease in Redis if it is still ours. When Redis
// cannot be reached, the lease expires by itself after the lease TTL.
func (l *lease) giveBack() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = releaseScript.Run(ctx, l.s.rdb, []string{l.s.leaseKey(l.id)}, l.token).Err()
}
