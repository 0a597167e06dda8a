package cli

import (
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// realList is `gemini --list-sessions` from 0.61.0, titles included.
const realList = `
Available sessions for this project (3):
  1. mcp (Just now) [b9aadb6c-5aca-4c65-b929-02b095cc2b94]
  2. a (title) with [brackets] (5 minutes ago) [a11a840f-092c-4b40-bb38-f8efd2d5e0b5]
  3. {"reasoning": "r", "complexity_score": 50} (Just now, current) [83762DA1-bb59-4a1e-b6df-4c014f7112fe]
`

func TestParseSessionList(t *testing.T) {
	t.Parallel()
	list, err := ParseSessionList(realList)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("got %d sessions: %+v", len(list), list)
	}
	if list[1].Title != "a (title) with [brackets]" || list[1].When != "5 minutes ago" || list[1].Index != 2 {
		t.Fatalf("line 2: %+v", list[1])
	}
	newest, ok := Newest(list)
	if !ok || newest.ID != "83762da1-bb59-4a1e-b6df-4c014f7112fe" {
		t.Fatalf("newest: %+v", newest)
	}
	empty, err := ParseSessionList("No previous sessions found for this project.\n")
	if err != nil || len(empty) != 0 {
		t.Fatalf("empty: %v %v", empty, err)
	}
	if _, ok := Newest(empty); ok {
		t.Fatal("Newest of an empty list")
	}
	if _, err := ParseSessionList("Usage: gemini [options]\n"); err == nil {
		t.Fatal("help text accepted as a session list")
	}
}

func FuzzParseSessionList(f *testing.F) {
	for _, s := range []string{realList, "No previous sessions found for this project.\n", "", "  1. x () [00000000-0000-0000-0000-000000000000]", "\x00\n  99999999999999999999. t (n) [b9aadb6c-5aca-4c65-b929-02b095cc2b94]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list, err := ParseSessionList(s)
		if err != nil {
			return
		}
		for _, l := range list {
			if !session.IsUUID(l.ID) || strings.ToLower(l.ID) != l.ID {
				t.Fatalf("bad id %q", l.ID)
			}
			if l.Index < 0 {
				t.Fatalf("negative index %d", l.Index)
			}
		}
	})
}
