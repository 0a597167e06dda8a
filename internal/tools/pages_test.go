package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestPagesFromTheStore checks that chat-page serves the pages of an
// answer another server process sharing the store paged: they live in
// the store, not in the process that made them.
func TestPagesFromTheStore(t *testing.T) {
	t.Parallel()
	a, r := newStubDeps(t)
	a = a.with(func(o *conversation.Options) { o.MaxAnswerBytes = 1000 })
	prompt := strings.Repeat("line of text\n", 200)
	res, _, _ := a.chat(context.Background(), request(t, "chat", map[string]any{"prompt": prompt}), ChatInput{Prompt: prompt})
	if res.IsError {
		t.Fatal(textOf(res))
	}
	id, _ := res.Meta["answerId"].(string)
	n, _ := res.Meta["pages"].(int)
	if id == "" || n != 3 {
		t.Fatalf("first page's meta %v", res.Meta)
	}
	b := &Deps{Conv: newConv(conversation.Options{Backend: r, Store: optsOf(a).Store, DefaultCwd: optsOf(a).DefaultCwd})}
	addAll(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), b)
	var all strings.Builder
	all.WriteString(strings.SplitN(textOf(res), "\n\n[gemini-mcp-server:", 2)[0])
	for page := 2; page <= n; page++ {
		res, _, _ := b.chatPage(context.Background(), request(t, "chat-page", map[string]any{"answerId": id, "page": page}), PageInput{AnswerID: id, Page: page})
		if res.IsError {
			t.Fatalf("page %d: %s", page, textOf(res))
		}
		all.WriteString(strings.SplitN(textOf(res), "\n\n[gemini-mcp-server:", 2)[0])
		if page == n && !strings.Contains(textOf(res), "end of the answer, page 3 of 3") {
			t.Fatalf("last page: %q", textOf(res))
		}
	}
	if all.String() != "answer to "+prompt {
		t.Fatal("the pages do not add up to the answer")
	}
	for _, tc := range []struct{ id, want string }{
		{session.NewUUID(), "unknown or expired answerId"},
		{"not-an-id", `answerId "not-an-id" is not an answer id`},
	} {
		res, _, _ := b.chatPage(context.Background(), request(t, "chat-page", map[string]any{"answerId": tc.id, "page": 2}), PageInput{AnswerID: tc.id, Page: 2})
		if !res.IsError || !strings.Contains(textOf(res), tc.want) {
			t.Errorf("answerId %q: %s", tc.id, textOf(res))
		}
	}
}
