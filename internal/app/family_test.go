//go:build !noapi

package app

import (
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/acp"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// TestBackendFamilies: each backend reports the family of the sessions
// it starts: the two that drive the Gemini CLI share theirs, the API
// backend has its own.
func TestBackendFamilies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		b    backend.Backend
		want config.Family
	}{
		{&cli.Runner{}, config.FamilyCLI},
		{&acp.Backend{}, config.FamilyCLI},
		{&api.Backend{}, config.FamilyAPI},
	} {
		if got := c.b.Family(); got != c.want {
			t.Errorf("%s backend: family %q, want %q", c.b.Name(), got, c.want)
		}
	}
}
