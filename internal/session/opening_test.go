package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// TestOpeningWaitsForTheOpen: a call made while the store is still opening
// waits for it and then reaches the opened store; Close closes that store.
func TestOpeningWaitsForTheOpen(t *testing.T) {
	release := make(chan struct{})
	inner := &closeCounter{Store: memstore.New(session.Options{})}
	st := session.Opening(func() (session.Store, error) {
		<-release
		return inner, nil
	}, session.OpeningHooks{Failed: func(err error, _ int, _ time.Duration) { t.Errorf("Failed called with %v", err) }})
	id := session.NewUUID()
	done := make(chan error, 1)
	go func() { done <- st.AppendTurn(t.Context(), id, json.RawMessage(`{"n":1}`)) }()
	// A call with a context that ends while the store opens returns the
	// context's error and changes nothing.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := st.Get(ctx, id); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context while opening: %v, want context.Canceled", err)
	}
	select {
	case err := <-done:
		t.Fatalf("AppendTurn returned before the store opened: %v", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	turns, ok, err := st.LoadTurns(t.Context(), id)
	if err != nil || !ok || len(turns) != 1 {
		t.Fatalf("LoadTurns: %d turns, %v, %v; want the one appended", len(turns), ok, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if inner.closed != 1 {
		t.Errorf("the opened store was closed %d times, want 1", inner.closed)
	}
}

// TestOpeningRetries: a failed open is tried again in the background,
// one second later, then at doubling delays up to 30 s, each failure
// reported with its delay. Meanwhile every call returns at once the latest
// attempt's error, which wraps ErrUnavailable, and once an attempt
// succeeds (what stopped the store went away) the calls reach the opened
// store and Opened hears of it. The attempts' clock is synctest's.
func TestOpeningRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const fails = 7
		start := time.Now()
		var attempts []time.Duration // when each attempt was made, from start
		type failure struct {
			err     error
			attempt int
			retryIn time.Duration
		}
		var failures []failure
		opened := 0
		inner := &closeCounter{Store: memstore.New(session.Options{})}
		st := session.Opening(func() (session.Store, error) {
			attempts = append(attempts, time.Since(start))
			if len(attempts) <= fails {
				// Not an ErrUnavailable: Opening makes it one.
				return nil, fmt.Errorf("disk full (attempt %d)", len(attempts))
			}
			return inner, nil
		}, session.OpeningHooks{
			Failed: func(err error, attempt int, retryIn time.Duration) {
				failures = append(failures, failure{err, attempt, retryIn})
			},
			Opened: func(n int) { opened = n },
		})
		ctx := t.Context()
		id := session.NewUUID()
		// The first call waits for the first attempt, then has its error.
		if _, _, err := st.Get(ctx, id); !errors.Is(err, session.ErrUnavailable) || !strings.Contains(err.Error(), "disk full (attempt 1)") {
			t.Fatalf("Get after the first attempt: %v", err)
		}
		// 2.5 s on, the second attempt (at 1 s) has failed, and the third
		// (at 1 + 2 s) is not made yet: calls return the latest error at
		// once, without waiting for it.
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		before := time.Now()
		if err := st.AppendTurn(ctx, id, json.RawMessage(`{}`)); !errors.Is(err, session.ErrUnavailable) || !strings.Contains(err.Error(), "disk full (attempt 2)") {
			t.Fatalf("AppendTurn between attempts: %v", err)
		}
		if _, err := st.Lease(ctx, id); !errors.Is(err, session.ErrUnavailable) {
			t.Fatalf("Lease between attempts: %v", err)
		}
		if time.Since(before) != 0 {
			t.Fatalf("calls between attempts waited %v", time.Since(before))
		}
		// The rest of the attempts.
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		want := []time.Duration{0, 1, 3, 7, 15, 31, 61, 91}
		for i := range want {
			want[i] *= time.Second
		}
		if !slices.Equal(attempts, want) {
			t.Fatalf("attempts at %v, want %v", attempts, want)
		}
		if len(failures) != fails {
			t.Fatalf("%d failures reported, want %d", len(failures), fails)
		}
		for i, f := range failures {
			if f.attempt != i+1 || f.retryIn != want[i+1]-want[i] || !errors.Is(f.err, session.ErrUnavailable) {
				t.Errorf("failure %d: attempt %d, retry in %v, %v; want attempt %d, retry in %v, ErrUnavailable", i, f.attempt, f.retryIn, f.err, i+1, want[i+1]-want[i])
			}
		}
		if opened != fails+1 {
			t.Errorf("Opened reported %d attempts, want %d", opened, fails+1)
		}
		if err := st.AppendTurn(ctx, id, json.RawMessage(`{"n":1}`)); err != nil {
			t.Fatalf("AppendTurn once the store opened: %v", err)
		}
		if turns, ok, err := st.LoadTurns(ctx, id); err != nil || !ok || len(turns) != 1 {
			t.Fatalf("LoadTurns: %d turns, %v, %v", len(turns), ok, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if inner.closed != 1 {
			t.Errorf("the opened store was closed %d times, want 1", inner.closed)
		}
	})
}

// TestOpeningCloseStopsRetries: Close during the wait between attempts
// ends the attempts at once (synctest.Test would fail on a goroutine left
// behind), with nothing to close, and calls after it still fail with the
// open's error.
func TestOpeningCloseStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		openErr := fmt.Errorf("session store /x/sessions.db: %w: disk I/O error", session.ErrUnavailable)
		n := 0
		st := session.Opening(func() (session.Store, error) { n++; return nil, openErr }, session.OpeningHooks{})
		time.Sleep(10 * time.Second) // attempts at 0, 1, 3 and 7 s
		synctest.Wait()
		start := time.Now()
		if err := st.Close(); err != nil {
			t.Errorf("Close after failed opens: %v", err)
		}
		if time.Since(start) != 0 {
			t.Errorf("Close waited %v for the next attempt", time.Since(start))
		}
		if n != 4 {
			t.Errorf("%d attempts in 10 s, want 4", n)
		}
		if _, _, err := st.Get(t.Context(), session.NewUUID()); !errors.Is(err, openErr) {
			t.Errorf("Get after Close: %v", err)
		}
		time.Sleep(time.Hour)
		if n != 4 {
			t.Errorf("%d attempts after Close, want none", n-4)
		}
	})
}

// TestOpeningFailed: while the store cannot be opened, every call
// returns the open's error.
func TestOpeningFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		openErr := errors.New("session store /x/sessions.db: unavailable: disk I/O error")
		st := session.Opening(func() (session.Store, error) { return nil, openErr }, session.OpeningHooks{})
		defer st.Close()
		ctx := t.Context()
		id := session.NewUUID()
		checks := map[string]error{}
		_, _, checks["Get"] = st.Get(ctx, id)
		_, checks["Touch"] = st.Touch(ctx, id, session.Turn{}, time.Now())
		_, _, checks["List"] = st.List(ctx, session.Filter{Limit: 1})
		checks["Delete"] = st.Delete(ctx, id)
		_, _, checks["LoadTurns"] = st.LoadTurns(ctx, id)
		checks["AppendTurn"] = st.AppendTurn(ctx, id, json.RawMessage(`{}`))
		checks["PutAnswer"] = st.PutAnswer(ctx, session.PagedAnswer{ID: session.NewUUID(), Pages: []string{"a"}})
		_, _, checks["GetAnswer"] = st.GetAnswer(ctx, id)
		_, checks["Lease"] = st.Lease(ctx, id)
		for op, err := range checks {
			if !errors.Is(err, openErr) || !errors.Is(err, session.ErrUnavailable) {
				t.Errorf("%s: %v, want the open's error, as ErrUnavailable", op, err)
			}
		}
	})
}

type closeCounter struct {
	session.Store
	closed int
}

func (c *closeCounter) Close() error {
	c.closed++
	return c.Store.Close()
}
