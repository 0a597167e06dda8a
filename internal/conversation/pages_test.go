package conversation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
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
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	d := New(Options{Store: store, MaxAnswerBytes: 30, MaxPagedBytes: 100})
	page := strings.Repeat("x", 30)
	first := d.pageAnswer(context.Background(), "", "", strings.Repeat(page, 10), true)
	id := first.Meta["answerId"].(string)
	got, ok, err := store.GetAnswer(context.Background(), id)
	if err != nil || !ok || len(got.Pages) != 3 || got.Dropped != 210 {
		t.Fatalf("huge answer: ok %v (%v), %d pages kept, %d dropped", ok, err, len(got.Pages), got.Dropped)
	}
	last := d.pageResult(id, got, 3).Content[0].(*mcp.TextContent).Text
	for _, text := range []string{first.Content[0].(*mcp.TextContent).Text, last} {
		if !strings.Contains(text, "the last 210 bytes are lost") {
			t.Errorf("no word of the lost part: %q", text)
		}
	}
	if strings.Contains(last, "end of the answer") {
		t.Errorf("the last kept page claims to end the answer: %q", last)
	}
}

// noPages is a store that cannot keep an answer's pages.
type noPages struct{ session.Store }

func (noPages) PutAnswer(context.Context, session.PagedAnswer) error {
	return errors.New("the store is full")
}

// TestPageTextKeptWholeWhenPagesCannotBe: a text no session made (a
// research report) whose pages the store cannot keep stays whole, since
// nothing could ask for the rest; a kept one is paged, its pages owner's.
func TestPageTextKeptWholeWhenPagesCannotBe(t *testing.T) {
	t.Parallel()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	text := strings.Repeat("x", 100)
	full := New(Options{Store: noPages{store}, MaxAnswerBytes: 30})
	if first, meta, ok := full.PageText(context.Background(), "tok", text); ok {
		t.Fatalf("paged with no pages kept: %q %v", first, meta)
	}
	d := New(Options{Store: store, MaxAnswerBytes: 30})
	first, meta, ok := d.PageText(context.Background(), "tok", text)
	if !ok || !strings.HasPrefix(first, strings.Repeat("x", 30)+"\n\n") || meta["pages"] != 4 {
		t.Fatalf("paged: %v %q %v", ok, first, meta)
	}
	a, found, err := store.GetAnswer(context.Background(), meta["answerId"].(string))
	if err != nil || !found || a.Owner != "tok" {
		t.Fatalf("the pages kept: %+v %v %v", a, found, err)
	}
}
