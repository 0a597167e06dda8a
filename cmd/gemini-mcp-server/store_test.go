package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// TestStoreStartupErrors: a --store the server cannot open stops it at
// start (exit 1) with what to do, before it serves anything.
func TestStoreStartupErrors(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--store", "mongodb://db:27017"}, 1, []string{"this server has no", "mongodb", "it supports", "memory:", "sqlite:"}},
		{[]string{"--store", "sessions.db"}, 2, []string{"use sqlite:PATH, memory: or redis://"}},
		{[]string{"--max-turns", "0"}, 2, []string{"--max-turns must be at least 1"}},
		{[]string{"--session-ttl", "30s"}, 2, []string{"--session-ttl must be at least 1m"}},
	} {
		cmd := e.command(tc.args...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, cmd.ProcessState.ExitCode(), tc.code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: no %q in\n%s", tc.args, w, out)
			}
		}
	}
}

// TestMaxTurnsBinary: with --store memory: and --max-turns 2, a session's
// third turn is refused with what to do, and a new chat still answers.
func TestMaxTurnsBinary(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.command("--store", "memory:", "--max-turns", "2"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	res := call("chat", map[string]any{"prompt": "one"})
	id, _ := res.Meta["sessionId"].(string)
	if res.IsError || id == "" {
		t.Fatalf("chat: %+v", res)
	}
	if res := call("chat-reply", map[string]any{"prompt": "two", "sessionId": id}); res.IsError {
		t.Fatalf("second turn: %+v", res.Content[0])
	}
	res = call("chat-reply", map[string]any{"prompt": "three", "sessionId": id})
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "has reached the limit of 2 turns (--max-turns): start a new session with chat") {
		t.Fatalf("third turn: %q", text)
	}
	if inv, _ := geminitest.ReadLog(e.log); len(inv) != 2 {
		t.Fatalf("%d CLI runs, want 2: the refused turn must not run", len(inv))
	}
	if res := call("chat", map[string]any{"prompt": "new"}); res.IsError {
		t.Fatalf("a new chat: %+v", res.Content[0])
	}
}
