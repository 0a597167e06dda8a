package redisstore

import (
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/storetest"
)

// TestConformance runs the suite every session store passes, each store
// on a Redis of its own.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts session.Options) session.Store {
		srv := redistest.Start(t)
		s, err := Open(t.Context(), srv.URL(0), opts)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}
