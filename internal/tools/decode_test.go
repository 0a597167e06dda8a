package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// rawArgs are arguments sent as they are written, such as ones that are
// not an object.
type rawArgs string

func (r rawArgs) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// TestSchemaErrorsAsTheSDKs checks that chat and chat-reply, which decode
// their arguments themselves, refuse what their schema refuses with the
// words the SDK's own validation uses (the client saw these when the SDK
// decoded the arguments): each bad call is made to the tool and to a
// tool of the same schema added with mcp.AddTool, and the two results
// must be the same error. Nothing refused reaches the backend.
func TestSchemaErrorsAsTheSDKs(t *testing.T) {
	t.Parallel()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	r := &stubRunner{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	addAll(srv, &Deps{Conv: conversation.New(conversation.Options{Backend: r, Store: store, DefaultCwd: realTemp(t)}), MaxPromptBytes: 1 << 20})
	ok := func(context.Context, *mcp.CallToolRequest, ChatInput) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "accepted"}}}, nil, nil
	}
	okReply := func(context.Context, *mcp.CallToolRequest, ReplyInput) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "accepted"}}}, nil, nil
	}
	okPage := func(context.Context, *mcp.CallToolRequest, PageInput) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "accepted"}}}, nil, nil
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "sdk-chat-page", InputSchema: pageTool().InputSchema}, okPage)
	chat, reply := chatTool(false), replyTool()
	mcp.AddTool(srv, &mcp.Tool{Name: "sdk-chat", InputSchema: chat.InputSchema}, ok)
	mcp.AddTool(srv, &mcp.Tool{Name: "sdk-chat-reply", InputSchema: reply.InputSchema}, okReply)
	cs := mcptest.Connect(t, srv, nil)
	cases := []any{
		map[string]any{"prompt": 5},
		map[string]any{"prompt": 1.5},
		map[string]any{"prompt": nil},
		map[string]any{"prompt": map[string]any{"a": 1}},
		map[string]any{"prompt": "x", "model": true},
		map[string]any{"prompt": "x", "model": nil},
		map[string]any{"prompt": "x", "cwd": []any{}},
		map[string]any{"prompt": "x", "files": "a"},
		map[string]any{"prompt": "x", "files": nil},
		map[string]any{"prompt": "x", "files": []any{1}},
		map[string]any{"prompt": "x", "files": []any{"a", nil}},
		map[string]any{"prompt": "x", "files": []any{"a", []any{"b"}}},
		map[string]any{"prompt": "x", "google_search": "yes"},
		map[string]any{"prompt": "x", "google_search": nil},
		map[string]any{"prompt": "x", "urls": []any{"https://example.com/", 3}},
		map[string]any{"model": "m"},
		map[string]any{},
		rawArgs(`null`),
		rawArgs(`[1]`),
		rawArgs(`"s"`),
		rawArgs(`5`),
	}
	chatCases := append(slices.Clone(cases),
		map[string]any{"prompt": "x", "response_schema": []any{}},
		map[string]any{"prompt": "x", "response_schema": "s"},
		map[string]any{"prompt": "x", "response_schema": nil})
	pageCases := []any{
		map[string]any{"answerId": "a", "page": 2.5},
		map[string]any{"answerId": "a", "page": "2"},
		map[string]any{"answerId": "a", "page": nil},
		map[string]any{"answerId": "a", "page": 1e20},
		map[string]any{"answerId": "a", "page": -1e20},
		map[string]any{"answerId": 5, "page": 2},
		map[string]any{"page": 2},
		map[string]any{},
		rawArgs(`[1]`),
	}
	for tool, cases := range map[string][]any{"chat": chatCases, "chat-reply": cases, "chat-page": pageCases} {
		for _, args := range cases {
			got, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				t.Fatalf("%s %v: %v", tool, args, err)
			}
			want, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sdk-" + tool, Arguments: args})
			if err != nil {
				t.Fatalf("sdk-%s %v: %v", tool, args, err)
			}
			if !want.IsError {
				t.Fatalf("sdk-%s %v: accepted; the case is wrong", tool, args)
			}
			// The SDK's decoder shows the end of the object in its
			// message on a number too large ("…000} overflows").
			if !got.IsError || textOf(got) != strings.Replace(textOf(want), "} overflows", " overflows", 1) {
				t.Errorf("%s %v:\n got %v %q\nwant %q", tool, args, got.IsError, textOf(got), textOf(want))
			}
		}
	}
	if len(r.calls) != 0 {
		t.Fatalf("%d refused calls reached the backend", len(r.calls))
	}
}

// TestSessionsResultsAsTheSDKs checks that sessions, which decodes its
// arguments itself and sets its structured content, answers every call,
// good or bad, as the SDK's typed handlers answered it.
func TestSessionsResultsAsTheSDKs(t *testing.T) {
	t.Parallel()
	d, _ := newStubDeps(t)
	chatOK(t, d, ChatInput{Prompt: "one"})
	chatOK(t, d, ChatInput{Prompt: "two"})
	srv := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	AddSessions(srv, d)
	mcp.AddTool(srv, &mcp.Tool{Name: "sdk-sessions", InputSchema: sessionsTool().InputSchema}, d.listSessions)
	cs := mcptest.Connect(t, srv, nil)
	for _, args := range []any{
		nil,
		map[string]any{},
		map[string]any{"limit": 1},
		map[string]any{"limit": 2.0},
		map[string]any{"limit": 0},
		map[string]any{"limit": -3},
		map[string]any{"limit": 101},
		map[string]any{"limit": 1e20},
		map[string]any{"limit": 0.5},
		map[string]any{"limit": "1"},
		map[string]any{"limit": nil},
		map[string]any{"cursor": 5},
		map[string]any{"cursor": "bogus"},
		map[string]any{"cwd": "missing"},
		rawArgs(`[1]`),
	} {
		got, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sessions", Arguments: args})
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		want, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sdk-sessions", Arguments: args})
		if err != nil {
			t.Fatalf("sdk %v: %v", args, err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("%v:\n got %s\nwant %s", args, g, w)
		}
	}
	// The output schema is the one the SDK generated.
	var sdk *mcp.Tool
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "sdk-sessions" {
			sdk = tool
		}
	}
	var ours any
	raw, _ := json.Marshal(sessionsTool().OutputSchema)
	if err := json.Unmarshal(raw, &ours); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(ours)
	w, _ := json.Marshal(sdk.OutputSchema)
	if string(g) != string(w) {
		t.Errorf("output schema:\n got %s\nwant %s", g, w)
	}
}

// BenchmarkChatDecode is the decode layer's cost of a chat call: its
// arguments decoded and checked into ChatInput.
func BenchmarkChatDecode(b *testing.B) {
	raw := []byte(`{"prompt":"review this function for races","model":"flash","systemPrompt":"be brief","files":["a.go","b.go"],"temperature":0.5,"thinking_mode":"low"}`)
	b.ReportAllocs()
	for b.Loop() {
		var in ChatInput
		if res := decodeArgs(raw, &in); res != nil {
			b.Fatal(textOf(res))
		}
	}
}
