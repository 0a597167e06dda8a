package proc

import (
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"
)

// TestMain checks that no run leaves a goroutine behind.
func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }
