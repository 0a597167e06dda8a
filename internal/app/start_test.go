package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/mcphost"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// stubCounter counts tokens one per byte, and how often it was asked.
type stubCounter struct{ calls atomic.Int64 }

func (c *stubCounter) CountTokens(_ context.Context, text string) (int, error) {
	c.calls.Add(1)
	return len(text), nil
}

// TestServedPartsAreTheBuilt: the server serves what the backend builder
// returned. The API backend's token counter (an object apart from the
// backend here) counts the expert tools' files, and the mcp-servers
// resource shows the MCP host the API backend was given.
func TestServedPartsAreTheBuilt(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := newAPIBackend
	t.Cleanup(func() { newAPIBackend = saved })
	counter := &stubCounter{}
	var given backend.ToolHost
	newAPIBackend = func(_ *config.Config, _ func(string) string, _ session.Store, tools backend.ToolHost, _ *slog.Logger) (backend.Backend, backend.TokenCounter, error) {
		given = tools
		return &stubAPI{}, counter, nil
	}
	cfg := parse(t, "--backend", "api", "--store", "memory:", "--cwd", root, "--project-root", root, "--mcp-config", mcpConfig(t))
	ctx := geminitest.Context(t)
	s, err := start(ctx, cfg, IO{Getenv: func(string) string { return "" }}.env(), "test", nil, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	if s.deps.Backend.Host == nil || given != backend.ToolHost(s.deps.Backend.Host) {
		t.Fatalf("the API backend was given %v, the builder returned %v", given, s.deps.Backend.Host)
	}
	if s.deps.Backend.Counter != counter {
		t.Fatalf("the builder returned the counter %v, not the API backend's", s.deps.Backend.Counter)
	}

	cs := mcptest.Connect(t, s.srv, nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "analyze", Arguments: map[string]any{"files": []string{"a.go"}, "question": "What is it?"}})
	if err != nil || res.IsError {
		t.Fatalf("analyze: %v %+v", err, res)
	}
	if counter.calls.Load() == 0 {
		t.Error("the expert tools did not count the file's tokens with the API backend's counter")
	}

	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: MCPServersURI})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Servers []mcphost.ServerStatus }
	if err := json.Unmarshal([]byte(read.Contents[0].Text), &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range doc.Servers {
		names = append(names, st.Name)
	}
	var want []string
	for _, st := range s.deps.Backend.Host.Status() {
		want = append(want, st.Name)
	}
	if len(names) != 2 || names[0] != want[0] || names[1] != want[1] {
		t.Fatalf("the resource shows %q, the built host has %q", names, want)
	}
}
