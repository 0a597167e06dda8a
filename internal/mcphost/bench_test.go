package mcphost

import (
	"fmt"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// BenchmarkDiscovery measures a host's life on stdio servers: New, every
// server started, connected and its tools listed, then Close; one server,
// and ten discovered in parallel.
func BenchmarkDiscovery(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			var servers []ServerConfig
			for i := range n {
				servers = append(servers, ServerConfig{Name: fmt.Sprintf("s%d", i), Command: mcpdown, Args: []string{"-tool", "echo", "-self-timeout", "1m"}})
			}
			for b.Loop() {
				h := New(&Config{Servers: servers}, Options{Backoff: func(int) time.Duration { return time.Hour }})
				if err := h.WaitSettled(geminitest.Context(b)); err != nil {
					b.Fatal(err)
				}
				if got := len(h.Tools()); got != n {
					b.Fatalf("%d tools, want %d: %+v", got, n, h.Status())
				}
				h.Close()
			}
		})
	}
}

// BenchmarkCall measures one tool call through the host to a stdio server.
func BenchmarkCall(b *testing.B) {
	h := New(&Config{Servers: []ServerConfig{{Name: "s", Command: mcpdown, Args: []string{"-tool", "echo", "-self-timeout", "1m"}}}}, Options{})
	defer h.Close()
	ctx := geminitest.Context(b)
	if err := h.WaitSettled(ctx); err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"text": "hi"}
	for b.Loop() {
		if _, err := h.Call(ctx, "mcp_s_echo", args); err != nil {
			b.Fatal(err)
		}
	}
}
