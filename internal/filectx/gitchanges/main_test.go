package gitchanges

import (
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"
)

// TestMain checks that no run leaves a goroutine behind (the copies of a
// git process's output).
func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }
