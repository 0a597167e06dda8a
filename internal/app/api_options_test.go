//go:build !noapi

package app

import (
	"slices"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

func TestAPIOptionsCarryToolSettings(t *testing.T) {
	if config.DefaultMaxToolRounds != api.DefaultMaxToolRounds {
		t.Fatalf("--max-tool-rounds defaults to %d, the API backend to %d", config.DefaultMaxToolRounds, api.DefaultMaxToolRounds)
	}
	o := apiOptions(&config.Config{MaxToolRounds: 7, AllowMCPTools: []string{"db"}}, nil, nil)
	if o.MaxToolRounds != 7 || !slices.Equal(o.AllowTools, []string{"db"}) {
		t.Fatalf("options %+v", o)
	}
}
