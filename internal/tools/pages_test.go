package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
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
	first := p.put("", []string{"a"})
	var last string
	for i := 0; i < keptAnswers; i++ {
		last = p.put("", []string{"b"})
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
