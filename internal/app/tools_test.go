package app

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
)

// TestRateLimitsNameEveryTool: the tools --rate-limits may name are the
// tools the server offers, in the order it lists them.
func TestRateLimitsNameEveryTool(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("test", "", []string{"--cwd", t.TempDir(), "--state-dir", t.TempDir(), "--backend", "oneshot", "--store", "memory:"},
		func(string) string { return "" }, io.Discard, configRules())
	if err != nil {
		t.Fatal(err)
	}
	conv, b, err := NewDeps(context.Background(), cfg, IO{Getenv: func(string) string { return "" }}.env(), slog.New(slog.DiscardHandler), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	defer conv.Store().Close()
	srv, err := newServer("test", cfg, conv, b.Counter, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	res, err := mcptest.Connect(t, srv, nil).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	got, want := slices.Sorted(slices.Values(configRules().RateLimitTools)), slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Errorf("--rate-limits takes %q, the server offers %q", got, want)
	}
}
