package tools

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// dbHost is a ToolHost with one untrusted tool, db's query.
type dbHost struct {
	mu    sync.Mutex
	calls int
}

func (h *dbHost) Tools() []backend.HostTool {
	return []backend.HostTool{{Name: "mcp_db_query", Server: "db", Tool: "query", Description: "runs SQL", Schema: map[string]any{"type": "object"}}}
}

func (h *dbHost) Call(_ context.Context, name string, _ map[string]any) (*mcp.CallToolResult, error) {
	if name != "mcp_db_query" {
		return nil, errors.New("no such tool")
	}
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "rows: 1"}}}, nil
}

// TestAPIBackendConfirmsThroughTheClient runs the API backend against the
// fake Gemini API, whose model calls an untrusted tool, behind the tools
// and a go-sdk client of each protocol generation: the client's user
// allows or declines, or cannot be asked.
func TestAPIBackendConfirmsThroughTheClient(t *testing.T) {
	t.Parallel()
	fake := fakeapi.New()
	t.Cleanup(fake.Close)
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		for _, c := range []struct {
			name   string
			answer func() *mcp.ElicitResult
			ran    bool
			says   string
		}{
			{"allows", accept("once"), true, "rows: 1"},
			{"declines", func() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }, false, "the user declined this call"},
			{"cannot be asked", nil, false, "--allow-mcp-tools=db.query"},
		} {
			t.Run(protocol+"/"+c.name, func(t *testing.T) {
				hist := memstore.New(session.Options{})
				t.Cleanup(func() { hist.Close() })
				host := &dbHost{}
				b, err := api.New(api.Options{Tools: host, Getenv: func(k string) string {
					return map[string]string{"GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.URL()}[k]
				}}, hist, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(b.Close)
				cs, _, asked := confirmServer(t, b, protocol, c.answer, nil)
				res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "chat",
					Arguments: map[string]any{"prompt": `[[call:mcp_db_query:{"sql":"select 1"}]]`}})
				if err != nil {
					t.Fatal(err)
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if res.IsError || !strings.Contains(text, "mcp_db_query returned") || !strings.Contains(text, c.says) {
					t.Errorf("answer %q does not say %q", text, c.says)
				}
				if ran := host.calls == 1; ran != c.ran {
					t.Errorf("the tool ran: %v, want %v", ran, c.ran)
				}
				if n := len(asked()); c.answer != nil && n != 1 {
					t.Errorf("asked %d times, want 1", n)
				}
			})
		}
	}
}

// TestAbandonedQuestionWithdrawn: a 2026-07-28 client that gives up while
// its user is asked leaves the turn suspended; its next call on the same
// session withdraws the question instead of waiting behind that turn.
func TestAbandonedQuestionWithdrawn(t *testing.T) {
	t.Parallel()
	fake := fakeapi.New()
	t.Cleanup(fake.Close)
	hist := memstore.New(session.Options{})
	t.Cleanup(func() { hist.Close() })
	host := &dbHost{}
	b, err := api.New(api.Options{Tools: host, Getenv: func(k string) string {
		return map[string]string{"GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.URL()}[k]
	}}, hist, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	asking := make(chan struct{}, 1)
	cs, _, _ := confirmServer(t, b, "2026-07-28", nil, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asking <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	id := res.Meta["sessionId"]
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": `[[call:mcp_db_query:{}]]`, "sessionId": id}})
		done <- err
	}()
	<-asking
	cancel()
	if err := <-done; err == nil {
		t.Error("the abandoned call succeeded")
	}
	res, err = cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": "never mind", "sessionId": id}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "never mind") {
		t.Fatalf("the next chat-reply: %v %+v", err, res)
	}
	if host.calls != 0 {
		t.Errorf("the unconfirmed tool ran %d times", host.calls)
	}
}
