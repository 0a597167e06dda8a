package conversation

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

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

// TestReplyReadsTheStoreOnce: a turn that continues a session reads its
// record once, to choose where it runs and to check --max-turns; the
// limit is still enforced from that read.
func TestReplyReadsTheStoreOnce(t *testing.T) {
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
	if n, l := store.gets.Load(), store.lists.Load(); n != 1 || l != 0 {
		t.Errorf("a reply by sessionId read %d records and listed %d times, want one read", n, l)
	}
	store.gets.Store(0)
	if _, err := d.Do(ctx, Request{Continue: true, Turn: backend.Turn{Prompt: "third"}, Render: rendered}); !errors.Is(err, ErrTurnLimit) {
		t.Fatalf("a third turn at --max-turns 2: %v, want refused", err)
	}
	if n, l := store.gets.Load(), store.lists.Load(); n != 0 || l != 1 {
		t.Errorf("a reply to the latest session read %d records and listed %d times, want one list", n, l)
	}
	if b.runs != 2 {
		t.Errorf("the backend ran %d times, want 2", b.runs)
	}
}
