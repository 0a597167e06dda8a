package memstore

import (
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts session.Options) session.Store { return New(opts) })
}

// TestObservedConformance: a store seen through session.Observed (as the
// metrics see it) is still a conformant store, every operation is
// reported by name.
func TestObservedConformance(t *testing.T) {
	var mu sync.Mutex
	ops := map[string]int{}
	storetest.Run(t, func(t *testing.T, opts session.Options) session.Store {
		st := New(opts)
		o := session.Observed(st, func(op string, d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			if d < 0 {
				t.Errorf("%s took %v", op, d)
			}
			ops[op]++
		})
		return o
	})
	mu.Lock()
	defer mu.Unlock()
	for _, op := range []string{"Get", "Touch", "List", "Delete", "LoadTurns", "AppendTurn", "PutAnswer", "GetAnswer", "Lease"} {
		if ops[op] == 0 {
			t.Errorf("%s was never reported", op)
		}
	}
}

// TestOpeningConformance: a store opened in the background through
// session.Opening (as the server opens the embedded store) is still a
// conformant store.
func TestOpeningConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts session.Options) session.Store {
		return session.Opening(func() (session.Store, error) { return New(opts), nil }, session.OpeningHooks{})
	})
}
