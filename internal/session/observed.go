package session

import (
	"context"
	"encoding/json"
	"time"
)

// Observed returns st with each operation reported to observe: its name
// (the method's), its duration and its error (nil on success; a record
// not found is a success). The metrics time the store through it.
// Unwrap gives st back, for the interfaces a store may offer beyond Store.
func Observed(st Store, observe func(op string, d time.Duration, err error)) Store {
	return &observed{st: st, observe: observe}
}

// Unwrap returns the store st observes (see Observed), or st itself.
func Unwrap(st Store) Store {
	for {
		o, ok := st.(*observed)
		if !ok {
			return st
		}
		st = o.st
	}
}

type observed struct {
	st      Store
	observe func(op string, d time.Duration, err error)
}

func (o *observed) done(op string, start time.Time, err error) { o.observe(op, time.Since(start), err) }

func (o *observed) Get(ctx context.Context, id string) (r Record, ok bool, err error) {
	start := time.Now()
	r, ok, err = o.st.Get(ctx, id)
	o.done("Get", start, err)
	return r, ok, err
}

func (o *observed) Touch(ctx context.Context, id string, t Turn, now time.Time) (r Record, err error) {
	start := time.Now()
	r, err = o.st.Touch(ctx, id, t, now)
	o.done("Touch", start, err)
	return r, err
}

func (o *observed) List(ctx context.Context, f Filter) (recs []Record, more bool, err error) {
	start := time.Now()
	recs, more, err = o.st.List(ctx, f)
	o.done("List", start, err)
	return recs, more, err
}

func (o *observed) Delete(ctx context.Context, id string) error {
	start := time.Now()
	err := o.st.Delete(ctx, id)
	o.done("Delete", start, err)
	return err
}

func (o *observed) LoadTurns(ctx context.Context, id string) (turns []json.RawMessage, ok bool, err error) {
	start := time.Now()
	turns, ok, err = o.st.LoadTurns(ctx, id)
	o.done("LoadTurns", start, err)
	return turns, ok, err
}

func (o *observed) AppendTurn(ctx context.Context, id string, turn json.RawMessage) error {
	start := time.Now()
	err := o.st.AppendTurn(ctx, id, turn)
	o.done("AppendTurn", start, err)
	return err
}

func (o *observed) PutAnswer(ctx context.Context, a PagedAnswer) error {
	start := time.Now()
	err := o.st.PutAnswer(ctx, a)
	o.done("PutAnswer", start, err)
	return err
}

func (o *observed) GetAnswer(ctx context.Context, id string) (a PagedAnswer, ok bool, err error) {
	start := time.Now()
	a, ok, err = o.st.GetAnswer(ctx, id)
	o.done("GetAnswer", start, err)
	return a, ok, err
}

// Lease times the taking of the lease, not its holding.
func (o *observed) Lease(ctx context.Context, id string) (release func(), err error) {
	start := time.Now()
	release, err = o.st.Lease(ctx, id)
	o.done("Lease", start, err)
	return release, err
}

func (o *observed) Close() error { return o.st.Close() }
