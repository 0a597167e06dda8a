//go:build !noapi

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
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
	checkAPICredentials = func(ctx context.Context, cfg *config.Config, getenv func(string) string) ([]string, error) {
		b, err := api.New(apiOptions(cfg, getenv, nil), discardHistory{}, nil)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		if err := b.Check(ctx); err != nil {
			return nil, err
		}
		models, err := b.Models(ctx)
		if err != nil {
			return nil, err
		}
		lines := make([]string, len(models))
		for i, m := range models {
			lines[i] = modelLine(m)
		}
		return lines, nil
	}
	researchOf = func(counter backend.TokenCounter) func() (tools.Researcher, error) {
		b, ok := counter.(*api.Backend)
		if !ok {
			return nil
		}
		return func() (tools.Researcher, error) {
			c, err := b.Interactions()
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	modelsOf = func(counter backend.TokenCounter) func(ctx context.Context) (any, error) {
		b, ok := counter.(*api.Backend)
		if !ok {
			return nil
		}
		return func(ctx context.Context) (any, error) { return b.Models(ctx) }
	}
}

// modelLine is a model as doctor prints it.
func modelLine(m api.ModelInfo) string {
	var b strings.Builder
	b.WriteString(m.Name)
	var notes []string
	if m.Default {
		notes = append(notes, "default")
	}
	for _, a := range m.Aliases {
		notes = append(notes, "alias "+a)
	}
	if !m.Stable {
		notes = append(notes, "not stable")
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
	}
	fmt.Fprintf(&b, ": %d tokens in", m.InputTokenLimit)
	switch m.Thinking {
	case "level":
		b.WriteString("; thinking by level")
	case "budget":
		b.WriteString("; thinking by budget")
	default:
		b.WriteString("; no thinking")
	}
	if m.GoogleSearch {
		b.WriteString("; Google Search")
	}
	if m.Caching {
		b.WriteString("; context caching")
	}
	if m.Images {
		b.WriteString("; images")
	}
	if m.InteractionsOnly {
		b.WriteString("; Interactions API only")
	}
	return b.String()
}

// apiOptions is the API backend's configuration; getenv nil means the
// process environment, tools nil no MCP host.
func apiOptions(cfg *config.Config, getenv func(string) string, tools backend.ToolHost) api.Options {
	return api.Options{Model: cfg.Turns.Model, FallbackModel: cfg.API.FallbackModel, Timeout: cfg.Turns.Timeout, MaxOutputBytes: cfg.Turns.MaxOutputBytes, Getenv: getenv,
		MaxToolRounds: cfg.API.MaxToolRounds, AllowTools: cfg.API.AllowMCPTools, Tools: tools, MaxInlineBytes: cfg.API.MaxInlineBytes,
		CacheTTL: cacheTTL(cfg.API.CacheTTL), ServerHistory: cfg.API.ServerHistory}
}

// discardHistory is the history of doctor's one request, which keeps none.
type discardHistory struct{}

func (discardHistory) LoadTurns(context.Context, string) ([]json.RawMessage, bool, error) {
	return nil, false, nil
}
func (discardHistory) AppendTurn(context.Context, string, json.RawMessage) error { return nil }

// cacheTTL is the API backend's CacheTTL for --cache-ttl: 0 turns caches
// off, which the backend's option says with a negative number.
func cacheTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
