package conversation

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// countingStore counts the session records read from the store it wraps.
type countingStore struct {
	session.Store
	gets, lists atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, id string) (session.Record, bool, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, id)
}

func (s *countingStore) List(ctx context.Context, f session.Filter) ([]session.Record, bool, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, f)
}

// rendered is a renderer that keeps nothing of the answer.
func rendered(context.Context, Outcome) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{}, nil
}

// TestReplyReadsTheStoreTwiceAtMost: a turn that continues a session by
// its id reads the record once to choose where it runs, and once more
// under the session's lease to check --max-turns (a turn of another
// process may have run in between); one that continues the latest
// session lists once and reads once. The limit is enforced.
func TestReplyReadsTheStoreTwiceAtMost(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	store := &countingStore{Store: mem}
	id := session.NewUUID()
	b := &scripted{answer: &backend.Answer{SessionID: id, Text: "hi"}}
	d := New(Options{Backend: b, Store: store, DefaultCwd: t.TempDir(), MaxTurns: 2})
	ctx := context.Background()
	if _, err := d.Do(ctx, Request{Turn: backend.Turn{Prompt: "first"}, Render: rendered}); err != nil {
		t.Fatal(err)
	}
	store.gets.Store(0)
	if _, err := d.Do(ctx, Request{Continue: true, Session: id, Turn: backend.Turn{Prompt: "second"}, Render: rendered}); err != nil {
		t.Fatal(err)
	}
	if n, l := store.gets.Load(), store.lists.Load(); n != 2 || l != 0 {
		t.Errorf("a reply by sessionId read %d records and listed %d times, want two reads", n, l)
	}
	store.gets.Store(0)
	if _, err := d.Do(ctx, Request{Continue: true, Turn: backend.Turn{Prompt: "third"}, Render: rendered}); !errors.Is(err, ErrTurnLimit) {
		t.Fatalf("a third turn at --max-turns 2: %v, want refused", err)
	}
	if n, l := store.gets.Load(), store.lists.Load(); n != 1 || l != 1 {
		t.Errorf("a reply to the latest session read %d records and listed %d times, want one list and one read", n, l)
	}
	if b.runs != 2 {
		t.Errorf("the backend ran %d times, want 2", b.runs)
	}
}

// racingStore stands for another replica: while this process waits for
// the session's lease, the other one runs a turn of the session.
type racingStore struct {
	session.Store
	other func()
}

func (s *racingStore) Lease(ctx context.Context, id string) (func(), error) {
	if s.other != nil {
		s.other()
		s.other = nil
	}
	return s.Store.Lease(ctx, id)
}

// TestTurnLimitCountsOtherReplicasTurns: the --max-turns check counts a
// turn another process ran after this one chose its session, so replicas
// waiting for one another's lease cannot each pass one short of the
// limit.
func TestTurnLimitCountsOtherReplicasTurns(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	store := &racingStore{Store: mem}
	id := session.NewUUID()
	b := &scripted{answer: &backend.Answer{SessionID: id, Text: "hi"}}
	dir := t.TempDir()
	d := New(Options{Backend: b, Store: store, DefaultCwd: dir, MaxTurns: 2})
	ctx := context.Background()
	if _, err := d.Do(ctx, Request{Turn: backend.Turn{Prompt: "first"}, Render: rendered}); err != nil {
		t.Fatal(err)
	}
	store.other = func() {
		rec, _, err := mem.Get(ctx, id)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := mem.Touch(ctx, id, session.Turn{Cwd: rec.Cwd, Backend: rec.Backend}, time.Now()); err != nil {
			t.Error(err)
		}
	}
	if _, err := d.Do(ctx, Request{Continue: true, Session: id, Turn: backend.Turn{Prompt: "second"}, Render: rendered}); !errors.Is(err, ErrTurnLimit) {
		t.Fatalf("a turn after another replica's took the session to --max-turns 2: %v, want refused", err)
	}
	if b.runs != 1 {
		t.Errorf("the backend ran %d times, want 1", b.runs)
	}
}
