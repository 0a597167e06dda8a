package app

import (
	"context"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/redisstore"
)

func init() {
	storeOpeners["redis"] = openRedisStore
	storeOpeners["rediss"] = openRedisStore
}

// openRedisStore opens --store redis://… or rediss://…, the store that
// replicas on several hosts share.
func openRedisStore(ctx context.Context, raw string, opts session.Options) (session.Store, error) {
	return redisstore.Open(ctx, raw, opts)
}
