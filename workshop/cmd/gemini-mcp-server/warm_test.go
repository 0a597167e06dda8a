package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// connectWatched connects to the server that e starts with args over
// stdio, its stderr watched.
func connectWatched(t *testing.T, e *env, args ...string) (*mcp.ClientSession, *logWatch) {
	t.Helper()
	cmd := e.command(args...)
	w := newLogWatch()
	cmd.Stderr = w
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, w)
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("server stderr:\n%s", w)
		}
	})
	return cs, w
}

// TestStdioWarmOnConnect: the warm backend starts a gemini --acp process
// and its spare session once a client has listed the tools, before any
// call; the first chat uses them. A client that only connects and pings
// (a health check) starts none.
func TestStdioWarmOnConnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_BACKEND=warm", "GEMINI_MCP_LOG_LEVEL=debug")
	cs, w := connectWatched(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if inv, _ := geminitest.ReadLog(e.log); len(inv) != 0 {
		t.Fatalf("processes started by a connection and a ping: %+v", inv)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	w.wait(t, 1, "a warm gemini process is ready for the first chat")
	// The process is up before its spare session is: a chat sent while
	// the spare is being made finds none ready and starts another process
	// for the chats that follow, so the test waits for the spare.
	w.wait(t, 1, "made a spare session")
	inv, _ := geminitest.ReadLog(e.log)
	if len(inv) != 1 || inv[0].Argv[0] != "--acp" {
		t.Fatalf("before any call: want one gemini --acp process, got %+v", inv)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "first", "model": "gemini-x"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	if got, want := res.Content[0].(*mcp.TextContent).Text, geminitest.Answer(1, "gemini-x", "", "first"); got != want {
		t.Fatalf("chat text %q, want %q", got, want)
	}
	w.wait(t, 1, "a new chat uses a spare session")
	if inv, _ = geminitest.ReadLog(e.log); len(inv) != 1 {
		t.Fatalf("want the one prepared process, got %+v", inv)
	}
}

// TestStdioWarmOnConnectOff: with --warm-on-connect=false no process
// starts before the first chat.
func TestStdioWarmOnConnectOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_BACKEND=warm", "GEMINI_MCP_LOG_LEVEL=debug")
	cs, w := connectWatched(t, e, "--warm-on-connect=false")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if inv, _ := geminitest.ReadLog(e.log); len(inv) != 0 {
		t.Fatalf("processes started before any call: %+v", inv)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "first", "model": "gemini-x"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	w.wait(t, 1, "warm gemini process started")
	if strings.Contains(w.String(), "ready for the first chat") {
		t.Fatal("a process was prepared with --warm-on-connect=false")
	}
}
