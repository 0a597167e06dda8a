package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

func init() { storeOpeners["sqlite"] = openDefaultStore }

// openDefaultStore opens --store sqlite:PATH, the default store.
//
// For now it makes PATH's directory (as the embedded store will) and keeps
// the sessions in memory: the embedded SQLite store
// (internal/session/embedded) replaces this file, and with it sessions
// outlive the process again.
func openDefaultStore(_ context.Context, raw string, opts session.Options) (session.Store, error) {
	path := strings.TrimPrefix(raw, "sqlite:")
	if path == "" {
		return nil, fmt.Errorf("%q names no file: use sqlite:PATH", raw)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return memstore.New(opts), nil
}
