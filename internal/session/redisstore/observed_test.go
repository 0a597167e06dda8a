package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestObservedKeepsSharedMethods: the Redis store seen through
// session.Observed (with metrics on) still offers what the rate limiter
// and the MCP host's token store look for beyond session.Store.
func TestObservedKeepsSharedMethods(t *testing.T) {
	st := session.Observed(&Store{}, func(string, time.Duration, error) {})
	if _, ok := st.(interface {
		TakeCall(ctx context.Context, key string, n int, per time.Duration) (bool, time.Duration, error)
	}); !ok {
		t.Error("TakeCall is lost")
	}
	if _, ok := st.(interface {
		LoadOAuthTokens(ctx context.Context, server string) (map[string][]byte, error)
		SaveOAuthToken(ctx context.Context, server, issuer string, value []byte) error
		DeleteOAuthToken(ctx context.Context, server, issuer string, stale func(value []byte) bool) (bool, error)
	}); !ok {
		t.Error("the OAuth token methods are lost")
	}
}
