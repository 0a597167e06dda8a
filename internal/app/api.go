//go:build !noapi

package app

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// The API backend is linked in unless the build says -tags noapi: its SDK
// costs every process some start-up time and memory, whether or not it
// serves (see docs/backends.md), and a CLI-only server can do
// without.
func init() {
	newAPIBackend = func(cfg *config.Config, getenv func(string) string, store session.Store, tools backend.ToolHost, log *slog.Logger) (backend.Backend, backend.TokenCounter, error) {
		b, err := api.New(apiOptions(cfg, getenv, tools), store, log)
		if err != nil {
			return nil, nil, err
		}
		return b, b, nil
	}
	checkAPICredentials = func(ctx context.Context, cfg *config.Config, getenv func(string) string) error {
		b, err := api.New(apiOptions(cfg, getenv, nil), discardHistory{}, nil)
		if err != nil {
			return err
		}
		defer b.Close()
		return b.Check(ctx)
	}
}

// apiOptions is the API backend's configuration; getenv nil means the
// process environment, tools nil no MCP host.
func apiOptions(cfg *config.Config, getenv func(string) string, tools backend.ToolHost) api.Options {
	return api.Options{Model: cfg.Turns.Model, Timeout: cfg.Turns.Timeout, MaxOutputBytes: cfg.Turns.MaxOutputBytes, Getenv: getenv,
		MaxToolRounds: cfg.API.MaxToolRounds, AllowTools: cfg.API.AllowMCPTools, Tools: tools, MaxInlineBytes: maxInline(cfg.API.MaxInlineBytes)}
}

// maxInline is --max-inline-bytes as api.Options takes it: 0 there means
// the default, and a negative number none inline.
func maxInline(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// discardHistory is the history of doctor's one request, which keeps none.
type discardHistory struct{}

func (discardHistory) LoadTurns(context.Context, string) ([]json.RawMessage, bool, error) {
	return nil, false, nil
}
func (discardHistory) AppendTurn(context.Context, string, json.RawMessage) error { return nil }
