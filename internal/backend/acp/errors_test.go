package acp

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// TestErrorUnwrap: a warm API error is a *backend.Error found through
// wrapping, and wraps the ACP error it came from.
func TestErrorUnwrap(t *testing.T) {
	err := classifyRPC(&rpcError{Code: 429, Message: "quota"})
	wrapped := fmt.Errorf("calling: %w", err)
	var e *backend.Error
	if !errors.As(wrapped, &e) || e != err || e.Kind != backend.KindAPI {
		t.Errorf("errors.As found %v", e)
	}
	var re *rpcError
	if !errors.As(err, &re) || re.Code != 429 {
		t.Errorf("a warm API error does not wrap the ACP error: %v", re)
	}
}
