package api

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/mcphost"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// BenchmarkToolRoundTrip measures what a tool call costs a turn, against
// the fake API and a real downstream server over stdio (mcpdown, reached
// through the MCP host), in three parts run on the same backend:
//
//   - turn: a turn without tools called (one API request);
//   - turn+tool: a turn whose model calls the downstream tool once (two
//     API requests, the call and its result in between);
//   - call: the same downstream call alone, through the host.
//
// The loop's overhead per tool round trip is turn+tool − turn − call: the
// second API request (to the local fake) and the loop's own work (the
// declarations, the permit, the functionResponse, the longer history).
func BenchmarkToolRoundTrip(b *testing.B) {
	down, cleanup, err := geminitest.BuildMCPDown()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cleanup)
	fake := fakeapi.New()
	b.Cleanup(fake.Close)
	host := mcphost.New(&mcphost.Config{Servers: []mcphost.ServerConfig{{
		Name: "s", Command: down, Args: []string{"-tool", "echo", "-self-timeout", "10m"}, Trust: true,
	}}}, mcphost.Options{})
	b.Cleanup(host.Close)
	// A last-resort guard: the benchmark runs for seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	if err := host.WaitSettled(ctx); err != nil || len(host.Tools()) != 1 {
		b.Fatalf("the host did not connect: %v %+v", err, host.Status())
	}
	hist := memstore.New(session.Options{})
	b.Cleanup(func() { hist.Close() })
	be, err := New(Options{Tools: host, Getenv: env(fake), Timeout: time.Minute}, hist, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(be.Close)

	turn := func(b *testing.B, prompt, want string) {
		for b.Loop() {
			a, err := be.Run(ctx, backend.Turn{Prompt: prompt})
			if err != nil {
				b.Fatal(err)
			}
			if !strings.Contains(a.Text, want) {
				b.Fatalf("answer %q does not hold %q", a.Text, want)
			}
		}
	}
	b.Run("turn", func(b *testing.B) { turn(b, "hello", "fake-api answer") })
	b.Run("turn+tool", func(b *testing.B) {
		turn(b, `[[call:mcp_s_echo:{"text":"hi"}]]`, `mcp_s_echo returned`)
	})
	b.Run("call", func(b *testing.B) {
		args := map[string]any{"text": "hi"}
		for b.Loop() {
			if _, err := host.Call(context.Background(), "mcp_s_echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
