package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSessionsSurviveRestart: with the default store, a session started
// by one server process is continued, listed and paged by the next.
func TestSessionsSurviveRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connect(t, e.command("--max-answer-bytes", "1000"))
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[stdout:3500]] before the restart"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	id, _ := res.Meta["sessionId"].(string)
	answer, _ := res.Meta["answerId"].(string)
	cs.Close()
	cs = connect(t, e.command("--max-answer-bytes", "1000"))
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": "after", "sessionId": id}})
	if err != nil || res.IsError || res.Meta["sessionId"] != id {
		t.Fatalf("chat-reply after a restart: %v %+v", err, res.Content[0])
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat-page", Arguments: map[string]any{"answerId": answer, "page": 2}})
	if err != nil || res.IsError {
		t.Fatalf("chat-page after a restart: %v %+v", err, res.Content[0])
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sessions", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, id+"  cli") ||
		!strings.Contains(res.Content[0].(*mcp.TextContent).Text, "2 turns") {
		t.Fatalf("sessions after a restart: %v %+v", err, res.Content[0])
	}
}
