package session

import (
	"context"
	"encoding/json"
	"time"
)

// Opening returns a Store that open opens in the background, started at
// once, so that a server answers its client's handshake while the store
// gets ready (the embedded store's SQLite open, schema check and clean-up
// take milliseconds of CPU). Each call waits for the open, or for its own
// context to end, and then goes to the opened store, or returns the
// open's error. failed, when not nil, is called with that error once, as
// soon as the open fails. Close waits for the open to end and closes what
// it opened.
func Opening(open func() (Store, error), failed func(error)) Store {
	o := &opening{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.st, o.err = open()
		if o.err != nil && failed != nil {
			failed(o.err)
		}
	}()
	return o
}

type opening struct {
	done chan struct{} // closed when open has returned
	st   Store
	err  error
}

// wait returns the opened store once the open has ended.
func (o *opening) wait(ctx context.Context) (Store, error) {
	select {
	case <-o.done:
		return o.st, o.err
	default:
	}
	select {
	case <-o.done:
		return o.st, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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

// Close waits for the open (which is bounded by the store's own timeouts)
// and closes the store it opened; a failed open leaves nothing to close.
func (o *opening) Close() error {
	<-o.done
	if o.st == nil {
		return nil
	}
	return o.st.Close()
}
