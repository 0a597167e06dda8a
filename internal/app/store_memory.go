package app

import (
	"context"
	"fmt"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

func init() { storeOpeners["memory"] = openMemoryStore }

// openMemoryStore opens --store memory:, a store in this process's memory:
// its sessions end when the process does.
func openMemoryStore(_ context.Context, raw string, opts session.Options) (session.Store, error) {
	if raw != "memory:" {
		return nil, fmt.Errorf("%q: the memory store takes nothing after memory:", raw)
	}
	return memstore.New(opts), nil
}
