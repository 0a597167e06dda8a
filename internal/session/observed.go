package session

import (
	"context"
	"encoding/json"
	"time"
)

// Observed returns st with each operation reported to observe: its name
// (the method's), its duration and its error (nil on success; a record
// not found is a success). The metrics time the store through it. A store
// that replicas share (the Redis store) keeps the methods it has beyond
// Store, observed too: TakeCall (ratelimit.SharedBuckets) and the OAuth
// token methods the MCP host keeps its tokens with.
func Observed(st Store, observe func(op string, d time.Duration, err error)) Store {
	o := &observed{st: st, observe: observe}
	if sh, ok := st.(sharedStore); ok {
		return &observedShared{observed: o, sh: sh}
	}
	return o
}

// sharedStore is what the Redis store offers beyond Store.
type sharedStore interface {
	TakeCall(ctx context.Context, key string, n int, per time.Duration) (ok bool, retryAfter time.Duration, err error)
	LoadOAuthTokens(ctx context.Context, server string) (map[string][]byte, error)
	SaveOAuthToken(ctx context.Context, server, issuer string, value []byte) error
	DeleteOAuthToken(ctx context.Context, server, issuer string, stale func(value []byte) bool) (bool, error)
}

type observedShared struct {
	*observed
	sh sharedStore
}

func (o *observedShared) TakeCall(ctx context.Context, key string, n int, per time.Duration) (ok bool, retryAfter time.Duration, err error) {
	start := time.Now()
	ok, retryAfter, err = o.sh.TakeCall(ctx, key, n, per)
	o.done("TakeCall", start, err)
	return ok, retryAfter, err
}

func (o *observedShared) LoadOAuthTokens(ctx context.Context, server string) (map[string][]byte, error) {
	start := time.Now()
	m, err := o.sh.LoadOAuthTokens(ctx, server)
	o.done("LoadOAuthTokens", start, err)
	return m, err
}

func (o *observedShared) SaveOAuthToken(ctx context.Context, server, issuer string, value []byte) error {
	start := time.Now()
	err := o.sh.SaveOAuthToken(ctx, server, issuer, value)
	o.done("SaveOAuthToken", start, err)
	return err
}

func (o *observedShared) DeleteOAuthToken(ctx context.Context, server, issuer string, stale func(value []byte) bool) (bool, error) {
	start := time.Now()
	deleted, err := o.sh.DeleteOAuthToken(ctx, server, issuer, stale)
	o.done("DeleteOAuthToken", start, err)
	return deleted, err
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
