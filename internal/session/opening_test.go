package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
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
	}, func(err error) { t.Errorf("failed called with %v", err) })
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

// TestOpeningFailed: a failed open is reported to failed once, and every
// call returns its error; Close has nothing to close.
func TestOpeningFailed(t *testing.T) {
	openErr := errors.New("session store /x/sessions.db: unavailable: disk I/O error")
	reported := make(chan error, 2)
	st := session.Opening(func() (session.Store, error) { return nil, openErr }, func(err error) { reported <- err })
	if err := <-reported; !errors.Is(err, openErr) {
		t.Fatalf("failed got %v", err)
	}
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
		if !errors.Is(err, openErr) {
			t.Errorf("%s: %v, want the open's error", op, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Errorf("Close after a failed open: %v", err)
	}
	if len(reported) != 0 {
		t.Errorf("failed was called again: %v", <-reported)
	}
}

type closeCounter struct {
	session.Store
	closed int
}

func (c *closeCounter) Close() error {
	c.closed++
	return c.Store.Close()
}
