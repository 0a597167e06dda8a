package session

import "context"

// wrapper is a Store made around another one (Opening, Observed).
type wrapper interface {
	underlying(ctx context.Context) (Store, error)
}

// Unwrap returns the store st is made around, through Opening (once it
// has opened: it waits as the Store's methods do, and returns the latest
// attempt's error while none has) and Observed, for what a store offers
// beyond Store, such as the jobs (internal/jobs's Store, which every store
// implements). A store that wraps nothing is returned as it is.
func Unwrap(ctx context.Context, st Store) (Store, error) {
	for {
		w, ok := st.(wrapper)
		if !ok {
			return st, nil
		}
		var err error
		if st, err = w.underlying(ctx); err != nil {
			return nil, err
		}
	}
}

func (o *opening) underlying(ctx context.Context) (Store, error) { return o.wait(ctx) }

func (o *observed) underlying(context.Context) (Store, error) { return o.st, nil }
