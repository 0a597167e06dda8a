package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// TestServeStdio serves an MCP server on a pair of pipes as the command
// serves stdin and stdout: a line that is not JSON gets its parse error
// and the session serves on, and the client closing its end ends the
// lifetime and the serve, cleanly.
func TestServeStdio(t *testing.T) {
	t.Parallel()
	ctx := geminitest.Context(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	life, endLife := context.WithCancel(ctx)
	defer endLife()
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(life, endLife, srv, StdioOptions{In: inR, Out: outW, MaxPromptBytes: 1 << 10, Log: slog.New(slog.DiscardHandler)})
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]json.RawMessage {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stdout ended: %v", lines.Err())
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("wrote %q: %v", lines.Text(), err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := next(); string(m["id"]) != `"init"` || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`not json`)
	if m := next(); string(m["id"]) != "null" || !strings.Contains(string(m["error"]), `"code":-32700`) {
		t.Fatalf("a line that is not JSON: %s", lines.Text())
	}
	send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if m := next(); string(m["id"]) != "7" || m["result"] == nil {
		t.Fatalf("ping after the bad line: %s", lines.Text())
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("the client closing stdin: %v, want a clean stop", err)
	}
	if life.Err() == nil {
		t.Fatal("the client closing stdin did not end the lifetime")
	}
}
