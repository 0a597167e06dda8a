package tools

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestSplitPages(t *testing.T) {
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

func TestPagerKeepsTheNewest(t *testing.T) {
	var p pager
	first := p.put("", []string{"a"}, 1<<20)
	var last string
	for i := 0; i < keptAnswers; i++ {
		last = p.put("", []string{"b"}, 1<<20)
	}
	if _, ok := p.get(first); ok {
		t.Fatal("the oldest answer was kept past the limit")
	}
	if _, ok := p.get(last); !ok {
		t.Fatal("the newest answer is gone")
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

// TestPagerBoundsBytes checks that the pager keeps its pages within a byte
// budget, evicting the oldest answers, and that an answer larger than the
// whole budget keeps its first pages and says the rest is lost.
func TestPagerBoundsBytes(t *testing.T) {
	var p pager
	const budget = 100
	page := strings.Repeat("x", 30)
	a := p.put("", []string{page, page}, budget)
	b := p.put("", []string{page}, budget)
	c := p.put("", []string{page, page}, budget) // 60 + 30 + 60 > 100: a goes
	if _, ok := p.get(a); ok {
		t.Error("the oldest answer was kept past the byte budget")
	}
	for _, id := range []string{b, c} {
		if _, ok := p.get(id); !ok {
			t.Error("a newer answer within the budget is gone")
		}
	}
	if p.bytes > budget {
		t.Fatalf("%d bytes kept, budget %d", p.bytes, budget)
	}

	huge := make([]string, 10)
	for i := range huge {
		huge[i] = page
	}
	id := p.put("s", huge, budget)
	got, ok := p.get(id)
	if !ok || len(got.pages) != 3 || got.dropped != 210 || p.bytes != 90 || len(p.pages) != 1 {
		t.Fatalf("huge answer: ok %v, %d pages kept, %d dropped, %d bytes in all, %d answers", ok, len(got.pages), got.dropped, p.bytes, len(p.pages))
	}
	d := &Deps{}
	first := d.pageResult(id, got, 1).Content[0].(*mcp.TextContent).Text
	last := d.pageResult(id, got, 3).Content[0].(*mcp.TextContent).Text
	for _, text := range []string{first, last} {
		if !strings.Contains(text, "the last 210 bytes are lost") {
			t.Errorf("no word of the lost part: %q", text)
		}
	}
	if strings.Contains(last, "end of the answer") {
		t.Errorf("the last kept page claims to end the answer: %q", last)
	}
}
