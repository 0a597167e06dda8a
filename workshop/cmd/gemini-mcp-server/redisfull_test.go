package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// TestRedisFullOrSlowKeepsTheAnswer: a new chat on the API backend whose
// conversation the Redis store cannot keep (Redis at maxmemory with
// noeviction, then Redis taking writes slower than the store waits)
// returns Gemini's answer, already paid for, with _meta.sessionSaved
// false, no sessionId, and a last text item saying it cannot be
// continued, as docs/users.md ("Sessions") promises.
func TestRedisFullOrSlowKeepsTheAnswer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	e, _ := apiEnv(t)
	addr, _ := startHTTP(t, e, "--stateless", "--backend", "api", "--store", srv.URL(0))
	cs := httpClient(t, addr, "")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := t.Context()

	check := func(what string, res *mcp.CallToolResult, err error) {
		t.Helper()
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", what, err, resultText(res))
		}
		if saved, ok := res.Meta["sessionSaved"].(bool); !ok || saved {
			t.Errorf("%s: _meta %+v, want sessionSaved false", what, res.Meta)
		}
		if id, ok := res.Meta["sessionId"]; ok {
			t.Errorf("%s: _meta.sessionId %v of a conversation that cannot be continued", what, id)
		}
		last, _ := res.Content[len(res.Content)-1].(*mcp.TextContent)
		if len(res.Content) < 2 || last == nil || !strings.Contains(last.Text, "could not be saved") || !strings.Contains(last.Text, "cannot be continued") {
			t.Errorf("%s: content %+v, want a last text item saying it cannot be continued", what, res.Content)
		}
		if !strings.Contains(answerOf(res), "fake") {
			t.Errorf("%s: answer %q", what, answerOf(res))
		}
	}

	// Full: maxmemory with noeviction, filled until Redis refuses writes.
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1mb").Err(); err != nil {
		t.Fatal(err)
	}
	fill := strings.Repeat("x", 32<<10)
	for i := 0; ; i++ {
		err := rdb.Set(ctx, "filler:"+string(rune('a'+i%26))+strings.Repeat("z", i/26), fill, 0).Err()
		if err != nil && strings.Contains(err.Error(), "OOM") {
			break
		}
		if err != nil || i > 1000 {
			t.Fatalf("filling Redis: %v after %d values", err, i)
		}
	}
	res, err := callTool(cs, "chat", map[string]any{"prompt": "a new chat while Redis is full"})
	check("Redis full", res, err)
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}

	// Slow: Redis takes no writes (reads still), longer than the store's
	// timeout; the store's own timeout ends the wait.
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	res, err = callTool(cs, "chat", map[string]any{"prompt": "a new chat while Redis is slow"})
	if err := rdb.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	check("Redis slow", res, err)

	// Back to normal, a chat is saved and continued.
	ok := callOK(t, cs, "chat", map[string]any{"prompt": "a new chat once Redis is well"})
	callOK(t, cs, "chat-reply", map[string]any{"prompt": "its reply", "sessionId": ok.Meta["sessionId"]})
}
