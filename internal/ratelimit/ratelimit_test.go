package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
)

func TestLimiterCountsPerClientAndTool(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(config.RecommendedRateLimits(), nil)
		for i := range 3 {
			if ok, _ := l.Allow("a", "thinkdeep"); !ok {
				t.Fatalf("call %d refused", i+1)
			}
		}
		ok, wait := l.Allow("a", "thinkdeep")
		if ok || wait != 20*time.Second {
			t.Fatalf("fourth call: ok %v, retry after %v; want refused, 20s", ok, wait)
		}
		// Other clients, other tools and unlimited tools are not affected.
		if ok, _ := l.Allow("b", "thinkdeep"); !ok {
			t.Fatal("another client refused")
		}
		if ok, _ := l.Allow("a", "analyze"); !ok {
			t.Fatal("another tool refused")
		}
		for range 100 {
			if ok, _ := l.Allow("a", "chat-page"); !ok {
				t.Fatal("an unlimited tool refused")
			}
		}
		time.Sleep(15 * time.Second)
		if ok, wait := l.Allow("a", "thinkdeep"); ok || wait != 5*time.Second {
			t.Fatalf("after 15s: ok %v, retry after %v; want refused, 5s", ok, wait)
		}
		time.Sleep(5 * time.Second)
		if ok, _ := l.Allow("a", "thinkdeep"); !ok {
			t.Fatal("refused once the delay it gave had passed")
		}
		if ok, _ := l.Allow("a", "thinkdeep"); ok {
			t.Fatal("a second call allowed after regaining one")
		}
		// An idle client regains its whole allowance, no more.
		time.Sleep(time.Hour)
		for i := range 3 {
			if ok, _ := l.Allow("a", "thinkdeep"); !ok {
				t.Fatalf("after an hour, call %d refused", i+1)
			}
		}
		if ok, _ := l.Allow("a", "thinkdeep"); ok {
			t.Fatal("idle time saved more than the allowance")
		}
	})
}

func TestLimiterDropsIdleClients(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(map[string]config.Rate{"debug": {N: 1, Per: time.Minute}}, nil)
		for i := range maxIdleBuckets {
			l.Allow(string(rune(i))+"x", "debug")
		}
		time.Sleep(time.Minute)
		l.Allow("new", "debug")
		if n := len(l.buckets); n != 1 {
			t.Fatalf("%d buckets kept, want the new client's only", n)
		}
	})
}

// TestRateLimitsOnTheWire: a tool that fails with JSON-RPC errors (an
// expert tool) over its limit is a JSON-RPC tool failure with the retry
// delay; a chat tool over its limit is the chat tools' error result;
// nothing runs.
func TestRateLimitsOnTheWire(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	var mu sync.Mutex
	ran := 0
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		ran++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	for _, name := range []string{"debug", "chat"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, handler)
	}
	s.AddReceivingMiddleware(NewLimiter(map[string]config.Rate{"debug": {N: 1, Per: time.Minute}, "chat": {N: 1, Per: time.Hour}}, nil).Middleware([]string{"debug"}))
	cs := mcptest.Connect(t, s, nil)
	call := func(name string) (*mcp.CallToolResult, error) {
		return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	}
	if res, err := call("debug"); err != nil || res.IsError {
		t.Fatalf("first debug call: %v %v", err, res)
	}
	_, err := call("debug")
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInternalError || we.Message != "Tool failure: this client has reached the rate limit of debug (1/min): nothing was run. Retry in 60 s, or ask the server's operator to raise --rate-limits" {
		t.Fatalf("debug over its limit: %v", err)
	}
	var data map[string]any
	if json.Unmarshal(we.Data, &data) != nil || data["retryAfterSeconds"] != 60.0 || data["category"] != "tool" || data["reason"] != "rate_limited" || data["limit"] != "1/min" || len(data) != 4 {
		t.Errorf("data %s", we.Data)
	}
	if res, err := call("chat"); err != nil || res.IsError {
		t.Fatalf("first chat call: %v %v", err, res)
	}
	res, err := call("chat")
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.HasPrefix(text, "Error executing gemini: ") || !strings.Contains(text, "Retry in 3600 s") || res.Meta["retryAfterSeconds"] != 3600.0 {
		t.Fatalf("chat over its limit: %v %q %v", res.IsError, text, res.Meta)
	}
	mu.Lock()
	defer mu.Unlock()
	if ran != 2 {
		t.Fatalf("%d calls ran, want 2", ran)
	}
}
