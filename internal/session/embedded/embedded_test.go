package embedded

import (
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts session.Options) session.Store {
		s, err := Open(filepath.Join(t.TempDir(), "sessions.db"), opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
