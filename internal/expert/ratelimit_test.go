package expert

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
)

func TestLimiterCountsPerClientAndTool(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(config.SeedRateLimits(), nil)
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

// TestRateLimitsOnTheWire: an expert tool over its limit is a JSON-RPC
// tool failure with the retry delay; chat over its limit is chat's own
// error result; nothing runs.
func TestRateLimitsOnTheWire(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, map[string]config.Rate{"debug": {N: 1, Per: time.Minute}, "chat": {N: 1, Per: time.Hour}})
	h.mustCall(t, "debug", map[string]any{"error_description": "it crashes"})
	_, err := h.call(t, "debug", map[string]any{"error_description": "it crashes"})
	we := wireErr(t, err)
	if we.Code != jsonrpc.CodeInternalError || !strings.Contains(we.Message, "Retry in 60 s") {
		t.Fatalf("code %d message %q", we.Code, we.Message)
	}
	var data struct {
		Retry int `json:"retryAfterSeconds"`
	}
	if json.Unmarshal(we.Data, &data) != nil || data.Retry != 60 {
		t.Errorf("data %s", we.Data)
	}
	h.mustCall(t, "chat", map[string]any{"prompt": "hi"})
	res, err := h.call(t, "chat", map[string]any{"prompt": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.HasPrefix(text, "Error executing gemini: ") || !strings.Contains(text, "Retry in 3600 s") {
		t.Fatalf("chat over its limit: %v %q", res.IsError, text)
	}
	if n := h.backend.count(); n != 2 {
		t.Fatalf("%d turns ran, want 2", n)
	}
}

func newHarnessWith(t *testing.T, limits map[string]config.Rate) *harness {
	t.Helper()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	return newHarnessOn(t, "api", store, nil, func(s *mcp.Server) {
		s.AddReceivingMiddleware(NewLimiter(limits, nil).Middleware())
	})
}

func TestClientKey(t *testing.T) {
	t.Parallel()
	if k := ClientKey(tools.WithCaller(context.Background(), "token:abc")); k != "token:abc" {
		t.Errorf("with a token: %q", k)
	}
	if k := ClientKey(context.Background()); k != "local" {
		t.Errorf("without a caller: %q", k)
	}
}
