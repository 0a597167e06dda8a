//go:build !noapi

package app

import (
	"slices"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

func TestAPIOptionsCarryToolSettings(t *testing.T) {
	o := apiOptions(&config.Config{API: config.API{MaxToolRounds: 7, AllowMCPTools: []string{"db"}}}, nil, nil)
	if o.MaxToolRounds != 7 || !slices.Equal(o.AllowTools, []string{"db"}) {
		t.Fatalf("options %+v", o)
	}
}
