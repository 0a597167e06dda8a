package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/embedded"
)

func init() { storeOpeners["sqlite"] = openDefaultStore }

// openDefaultStore opens --store sqlite:PATH, the embedded store and the
// default: one SQLite file that several processes on this host may share.
func openDefaultStore(_ context.Context, raw string, opts session.Options) (session.Store, error) {
	path := strings.TrimPrefix(raw, "sqlite:")
	if path == "" {
		return nil, fmt.Errorf("%q names no file: use sqlite:PATH", raw)
	}
	return embedded.Open(path, opts)
}
