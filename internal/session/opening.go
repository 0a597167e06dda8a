package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The delays between attempts to open a store that failed to open: the
// first retry comes OpenRetryMin after the failure, each further one
// twice as late, up to OpenRetryMax.
const (
	OpenRetryMin = time.Second
	OpenRetryMax = 30 * time.Second
)

// OpeningHooks is what Opening reports of its attempts; either may be nil.
type OpeningHooks struct {
	// Failed is called after each failed attempt, with its error, its
	// number (1 for the first) and the delay before the next.
	Failed func(err error, attempt int, retryIn time.Duration)
	// Opened is called once the store opens after at least one failed
	// attempt, with the number of attempts it took.
	Opened func(attempts int)
}

// Opening returns a Store that open opens in the background, started at
// once, so that a server answers its client's handshake while the store
// gets ready (the embedded store's SQLite open, schema check and clean-up
// take milliseconds of CPU).
//
// A call made before the first attempt has ended waits for it, or for its
// own context to end. A failed open is tried again, OpenRetryMin later,
// then at doubling delays up to OpenRetryMax, until it succeeds or the
// store is closed: what stopped it (a full disk, a file another program
// held) may go away, and the store then opens by itself. Meanwhile every
// call returns at once the latest attempt's error, which wraps
// ErrUnavailable. Close stops the attempts, waits for one under way and
// closes what it opened.
func Opening(open func() (Store, error), hooks OpeningHooks) Store {
	o := &opening{first: make(chan struct{}), stop: make(chan struct{}), gone: make(chan struct{})}
	go o.run(open, hooks)
	return o
}

type opening struct {
	first chan struct{} // closed when the first attempt has ended
	stop  chan struct{} // closed by Close: no more attempts
	gone  chan struct{} // closed when run has returned
	once  sync.Once

	mu  sync.Mutex
	st  Store // the opened store, once an attempt succeeded
	err error // the latest attempt's error, while none has
}

// run makes the attempts.
func (o *opening) run(open func() (Store, error), hooks OpeningHooks) {
	defer close(o.gone)
	delay := OpenRetryMin
	for attempt := 1; ; attempt++ {
		st, err := open()
		if err != nil && !errors.Is(err, ErrUnavailable) {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		o.mu.Lock()
		o.st, o.err = st, err
		o.mu.Unlock()
		if attempt == 1 {
			close(o.first)
		}
		if err == nil {
			if attempt > 1 && hooks.Opened != nil {
				hooks.Opened(attempt)
			}
			return
		}
		if hooks.Failed != nil {
			hooks.Failed(err, attempt, delay)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-o.stop:
			t.Stop()
			return
		}
		delay = min(2*delay, OpenRetryMax)
	}
}

// wait returns the opened store, or the latest attempt's error, once the
// first attempt has ended.
func (o *opening) wait(ctx context.Context) (Store, error) {
	select {
	case <-o.first:
	default:
		select {
		case <-o.first:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.st != nil {
		return o.st, nil
	}
	return nil, o.err
}

func (o *opening) Get(ctx context.Context, id string) (Record, bool, error) {
	st, err := o.wait(ctx)
	if err != nil {
		return Record{}, false, err
	}
	return st.Get(ctx, id)
}

func (o *opening) Touch(ctx context.Context, id string, t Turn, now time.Time) (Record, error) {
	st, err := o.wait(ctx)
	if err != nil {
		return Record{}, err
	}
	return st.Touch(ctx, id, t, now)
}

func (o *opening) List(ctx context.Context, f Filter) ([]Record, bool, error) {
	st, err := o.wait(ctx)
	if err != nil {
		return nil, false, err
	}
	return st.List(ctx, f)
}

func (o *opening) Delete(ctx context.Context, id string) error {
	st, err := o.wait(ctx)
	if err != nil {
		return err
	}
	return st.Delete(ctx, id)
}

func (o *opening) LoadTurns(ctx context.Context, id string) ([]json.RawMessage, bool, error) {
	st, err := o.wait(ctx)
	if err != nil {
		return nil, false, err
	}
	return st.LoadTurns(ctx, id)
}

func (o *opening) AppendTurn(ctx context.Context, id string, turn json.RawMessage) error {
	st, err := o.wait(ctx)
	if err != nil {
		return err
	}
	return st.AppendTurn(ctx, id, turn)
}

func (o *opening) PutAnswer(ctx context.Context, a PagedAnswer) error {
	st, err := o.wait(ctx)
	if err != nil {
		return err
	}
	return st.PutAnswer(ctx, a)
}

func (o *opening) GetAnswer(ctx context.Context, id string) (PagedAnswer, bool, error) {
	st, err := o.wait(ctx)
	if err != nil {
		return PagedAnswer{}, false, err
	}
	return st.GetAnswer(ctx, id)
}

func (o *opening) Lease(ctx context.Context, id string) (func(), error) {
	st, err := o.wait(ctx)
	if err != nil {
		return nil, err
	}
	return st.Lease(ctx, id)
}

// Close stops the attempts, waits for one under way (bounded by the
// store's own timeouts) and closes the store it opened; if none did,
// there is nothing to close.
func (o *opening) Close() error {
	o.once.Do(func() { close(o.stop) })
	<-o.gone
	o.mu.Lock()
	st := o.st
	o.mu.Unlock()
	if st == nil {
		return nil
	}
	return st.Close()
}
