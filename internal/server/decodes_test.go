package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/expert"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// echoBackend answers every turn at once, in a new or the continued
// session.
type echoBackend struct {
	mu    sync.Mutex
	turns int
}

func (*echoBackend) Name() string          { return "api" }
func (*echoBackend) Family() config.Family { return config.FamilyAPI }
func (*echoBackend) Close()                {}
func (b *echoBackend) Run(_ context.Context, t backend.Turn) (*backend.Answer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.turns++
	id := t.Session
	if !session.IsUUID(id) {
		id = session.NewUUID()
	}
	return &backend.Answer{SessionID: id, Text: "answer"}, nil
}

// TestArgumentsDecodedOnce checks that a tool call's arguments are decoded
// once, accepted or refused, by chat, chat-reply, sessions, chat-page and
// an expert tool served as the registry serves them, over an MCP client and server: the tools
// decode them with validate.Arguments, which counts its decodes, and read
// each value from there into their input struct; the SDK decodes none,
// the tools being raw. It is not parallel: the count is the process's.
func TestArgumentsDecodedOnce(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	be := &echoBackend{}
	conv := conversation.New(conversation.Options{Backend: be, Store: store, DefaultCwd: dir})
	chat := &tools.Deps{Conv: conv, MaxPromptBytes: 1 << 20}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	register(srv, Families{Chat: chat, Expert: &expert.Deps{Turns: conv, ProjectRoot: dir}})
	cs := mcptest.Connect(t, srv, nil)

	call := func(tool string, args map[string]any) (res *mcp.CallToolResult, err error) {
		t.Helper()
		before := validate.Decodes()
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if n := validate.Decodes() - before; n != 1 {
			t.Errorf("%s %v: the arguments were decoded %d times, want once", tool, args, n)
		}
		return res, err
	}
	res, err := call("chat", map[string]any{"prompt": "p", "temperature": 0.5, "files": []string{}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %v", err, res)
	}
	id, _ := res.Meta["sessionId"].(string)
	if res, err := call("chat-reply", map[string]any{"prompt": "q", "sessionId": id, "thinking_mode": "low"}); err != nil || res.IsError {
		t.Fatalf("chat-reply: %v %v", err, res)
	}
	if res, err := call("thinkdeep", map[string]any{"current_analysis": "a", "focus_areas": []string{"x"}, "temperature": 1}); err != nil || res.IsError {
		t.Fatalf("thinkdeep: %v %v", err, res)
	}
	if be.turns != 3 {
		t.Fatalf("%d turns, want 3", be.turns)
	}
	if res, err := call("sessions", map[string]any{"limit": 5}); err != nil || res.IsError || res.StructuredContent == nil {
		t.Fatalf("sessions: %v %v", err, res)
	}
	if res, err := call("chat-page", map[string]any{"answerId": "none", "page": 2}); err != nil || !res.IsError {
		t.Fatalf("chat-page of no answer: %v %v, want a refusal", err, res)
	}
	// Refused calls: bad tuning, a bad type, an unknown argument.
	for _, args := range []map[string]any{{"prompt": "p", "temperature": 5}, {"prompt": 5}, {"prompt": "p", "session_id": "x"}} {
		if res, err := call("chat", args); err != nil || !res.IsError {
			t.Errorf("chat %v: %v %v, want a refusal", args, err, res)
		}
	}
	_, err = call("thinkdeep", map[string]any{"current_analysis": 5, "temperature": 9, "nope": true})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("thinkdeep, bad arguments: %v, want -32602", err)
	}
	var data struct {
		Errors []toolerr.FieldError `json:"validation_errors"`
	}
	if json.Unmarshal(we.Data, &data) != nil || len(data.Errors) != 3 {
		t.Errorf("thinkdeep, bad arguments: %s, want three fields at fault", we.Data)
	}
	if be.turns != 3 {
		t.Fatalf("refused calls reached the backend: %d turns", be.turns)
	}
}
