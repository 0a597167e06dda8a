package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP host asks the client to confirm an untrusted server's tool call
// through elicitation (helpers in mcphost_test.go).

// TestHostConfirmsThroughElicitation: a tool of an untrusted server runs
// once the client's user allows it, and is refused when the user
// declines, under both protocol generations: elicitation/create up to
// 2025-11-25, the multi-round-trip flow of 2026-07-28 (the go-sdk
// client's default, which runs the flow by itself); over stdio, and over
// HTTP with sessions (where the go-sdk client speaks 2025-11-25) and
// without (2026-07-28).
func TestHostConfirmsThroughElicitation(t *testing.T) {
	t.Parallel()
	for _, tp := range []string{"stdio/2025-11-25", "stdio/2026-07-28", "http/2025-11-25", "stateless/2026-07-28"} {
		transport, protocol, _ := strings.Cut(tp, "/")
		for _, c := range []struct {
			name   string
			answer *mcp.ElicitResult
			says   string
		}{
			{"allows", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, `query {\"sql\":\"select 1\"}`},
			{"declines", &mcp.ElicitResult{Action: "decline"}, "the user declined this call"},
		} {
			t.Run(tp+"/"+c.name, func(t *testing.T) {
				h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
				var mu sync.Mutex
				var asked []string
				opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, req.Params.Message)
					return c.answer, nil
				}}
				var cs *mcp.ClientSession
				if transport == "stdio" {
					cs = h.stdio(t, opts, protocol)
				} else if transport == "http" {
					cs = h.http(t, opts, protocol)
				} else {
					cs = h.http(t, opts, protocol, "--stateless")
				}
				h.connected(t, "db")
				prompt := `[[call:mcp_db_query:{"sql":"select 1"}]]`
				text, _ := chat(t, cs, "chat", map[string]any{"prompt": prompt})
				fr := h.results(prompt)
				if len(fr) != 1 || !strings.Contains(string(fr[0].Response), c.says) {
					t.Fatalf("function responses %s, want %q", fmtResponses(fr), c.says)
				}
				if c.name == "declines" && strings.Contains(string(fr[0].Response), "query {") {
					t.Errorf("the declined call ran: %s", fr[0].Response)
				}
				if !strings.Contains(text, "mcp_db_query returned") {
					t.Errorf("answer %q", text)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(asked) != 1 || !strings.Contains(asked[0], "query") {
					t.Errorf("asked %q, want once about query", asked)
				}
			})
		}
	}
}

// TestHostAlwaysAllowLastsForTheClient: over stdio, "always allow this
// tool" holds for the rest of the conversation (chat-reply does not ask
// again) and for a new one; the question says so.
func TestHostAlwaysAllowLastsForTheClient(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
	var mu sync.Mutex
	var asked []string
	cs := h.stdio(t, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "tool"}}, nil
	}}, "")
	h.connected(t, "db")
	prompt := `[[call:mcp_db_query:{"sql":"select 1"}]]`
	_, id := chat(t, cs, "chat", map[string]any{"prompt": prompt})
	text, _ := chat(t, cs, "chat-reply", map[string]any{"prompt": prompt, "sessionId": id})
	if !strings.Contains(text, `query {\"sql\":\"select 1\"}`) {
		t.Errorf("the reply's answer %q", text)
	}
	text, _ = chat(t, cs, "chat", map[string]any{"prompt": prompt})
	if !strings.Contains(text, `query {\"sql\":\"select 1\"}`) {
		t.Errorf("the new conversation's answer %q", text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("asked %d times in two conversations, want 1", len(asked))
	}
	if !strings.Contains(asked[0], "holds for this client, in every conversation, until the server restarts") {
		t.Errorf("the question does not say how long an always-allow lasts and for whom: %q", asked[0])
	}
}

// TestHostWithoutElicitation: a client that cannot elicit gets an
// untrusted tool refused, Gemini being told how the operator may allow
// it; with --allow-mcp-tools naming it, it runs.
func TestHostWithoutElicitation(t *testing.T) {
	t.Parallel()
	prompt := `[[call:mcp_db_query:{"sql":"select 2"}]]`
	for _, c := range []struct {
		args []string
		says string
	}{
		{nil, "--allow-mcp-tools=db.query"},
		{[]string{"--allow-mcp-tools", "db.query"}, `query {\"sql\":\"select 2\"}`},
	} {
		h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host-test", Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: h.command(c.args...)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.connected(t, "db")
		text, _ := chat(t, cs, "chat", map[string]any{"prompt": prompt})
		cs.Close()
		if fr := h.results(prompt); len(fr) != 1 || !strings.Contains(string(fr[0].Response), c.says) || !strings.Contains(text, c.says) {
			t.Errorf("%v: function responses %s, answer %q: want %q", c.args, fmtResponses(fr), text, c.says)
		}
	}
}

// TestHostCancelWhileAsking: cancelling the chat while the client's user
// is being asked (elicitation/create, 2025-11-25) ends the question and
// the call; the tool never runs and the server goes on serving.
func TestHostCancelWhileAsking(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
	asking, ended := make(chan struct{}), make(chan struct{})
	cs := h.stdio(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(asking)
		<-ctx.Done()
		close(ended)
		return nil, ctx.Err()
	}}, "2025-11-25")
	h.connected(t, "db")
	ctx, cancel := context.WithCancel(guardCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": `[[call:mcp_db_query:{}]]`}})
		done <- err
	}()
	<-asking
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled call succeeded")
	}
	select {
	case <-ended:
	case <-guardCtx(t).Done():
		t.Fatal("the question was not withdrawn")
	}
	text, _ := chat(t, cs, "chat", map[string]any{"prompt": "still there?"})
	if !strings.Contains(text, "still there?") {
		t.Errorf("answer %q", text)
	}
}

// TestHostAbandonedQuestion: a 2026-07-28 client that gives up while its
// user is asked to confirm a tool call never comes back with the answer;
// the turn it left suspended must not hold the session: the next
// chat-reply on it answers.
func TestHostAbandonedQuestion(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
	asking := make(chan struct{}, 1)
	cs := h.stdio(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asking <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}, "2026-07-28")
	h.connected(t, "db")
	_, id := chat(t, cs, "chat", map[string]any{"prompt": "hello"})
	ctx, cancel := context.WithCancel(guardCtx(t))
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
	text, _ := chat(t, cs, "chat-reply", map[string]any{"prompt": "never mind", "sessionId": id})
	if !strings.Contains(text, "never mind") {
		t.Errorf("answer %q", text)
	}
}
