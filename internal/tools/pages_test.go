package tools

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

func TestSplitPages(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("héllo wörld\n", 500)
	pages := splitPages(s, 1000)
	if strings.Join(pages, "") != s {
		t.Fatal("pages lose text")
	}
	for i, p := range pages {
		if len(p) > 1000 || !utf8.ValidString(p) {
			t.Fatalf("page %d: %d bytes, valid %v", i, len(p), utf8.ValidString(p))
		}
		if i < len(pages)-1 && !strings.HasSuffix(p, "\n") {
			t.Fatalf("page %d does not end at a line break", i)
		}
	}
	// No line breaks: cut at character boundaries.
	s = strings.Repeat("ü", 1001)
	pages = splitPages(s, 1000)
	if strings.Join(pages, "") != s || len(pages) != 3 {
		t.Fatalf("%d pages", len(pages))
	}
	for _, p := range pages {
		if !utf8.ValidString(p) {
			t.Fatal("a page splits a character")
		}
	}
	if p := splitPages("short", 1000); len(p) != 1 || p[0] != "short" {
		t.Fatalf("short: %q", p)
	}
}

func FuzzSplitPages(f *testing.F) {
	f.Add("héllo\nwörld", 1000)
	f.Add(strings.Repeat("x\n", 700), 1000)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 4 || max > 1<<16 {
			return
		}
		pages := splitPages(s, max)
		if strings.Join(pages, "") != s {
			t.Fatal("pages lose text")
		}
		for _, p := range pages {
			if len(p) > max {
				t.Fatalf("page of %d bytes, max %d", len(p), max)
			}
			if len(s) > 0 && len(p) == 0 {
				t.Fatal("empty page")
			}
		}
	})
}

// TestPagesBoundedPerAnswer checks that an answer larger than
// --max-output-bytes' budget for pages keeps its first pages and says the
// rest is lost.
func TestPagesBoundedPerAnswer(t *testing.T) {
	t.Parallel()
	d, _ := newStubDeps(t)
	d.MaxAnswerBytes, d.MaxPagedBytes = 30, 100
	page := strings.Repeat("x", 30)
	first := d.pageAnswer(context.Background(), "", strings.Repeat(page, 10))
	id := first.Meta["answerId"].(string)
	got, ok, err := d.Store.GetAnswer(context.Background(), id)
	if err != nil || !ok || len(got.Pages) != 3 || got.Dropped != 210 {
		t.Fatalf("huge answer: ok %v (%v), %d pages kept, %d dropped", ok, err, len(got.Pages), got.Dropped)
	}
	last := d.pageResult(id, got, 3).Content[0].(*mcp.TextContent).Text
	for _, text := range []string{textOf(first), last} {
		if !strings.Contains(text, "the last 210 bytes are lost") {
			t.Errorf("no word of the lost part: %q", text)
		}
	}
	if strings.Contains(last, "end of the answer") {
		t.Errorf("the last kept page claims to end the answer: %q", last)
	}
}

// TestPagesFromTheStore checks that chat-page serves the pages of an
// answer another server process sharing the store paged: they live in
// the store, not in the process that made them.
func TestPagesFromTheStore(t *testing.T) {
	t.Parallel()
	a, r := newStubDeps(t)
	a.MaxAnswerBytes = 1000
	prompt := strings.Repeat("line of text\n", 200)
	res, _, _ := a.chat(context.Background(), request(t, "chat", map[string]any{"prompt": prompt}, ""), ChatInput{Prompt: prompt})
	if res.IsError {
		t.Fatal(textOf(res))
	}
	id, _ := res.Meta["answerId"].(string)
	n, _ := res.Meta["pages"].(int)
	if id == "" || n != 3 {
		t.Fatalf("first page's meta %v", res.Meta)
	}
	b := &Deps{Backend: r, Store: a.Store, DefaultCwd: a.DefaultCwd}
	Register(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), b)
	var all strings.Builder
	all.WriteString(strings.SplitN(textOf(res), "\n\n[gemini-mcp-server:", 2)[0])
	for page := 2; page <= n; page++ {
		res, _, _ := b.chatPage(context.Background(), request(t, "chat-page", map[string]any{"answerId": id, "page": page}, ""), PageInput{AnswerID: id, Page: page})
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
		res, _, _ := b.chatPage(context.Background(), request(t, "chat-page", map[string]any{"answerId": tc.id, "page": 2}, ""), PageInput{AnswerID: tc.id, Page: 2})
		if !res.IsError || !strings.Contains(textOf(res), tc.want) {
			t.Errorf("answerId %q: %s", tc.id, textOf(res))
		}
	}
}
