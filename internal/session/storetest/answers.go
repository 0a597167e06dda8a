package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

func (c *conformance) answers(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	if _, ok, err := s.GetAnswer(ctx, idC); ok || err != nil {
		t.Fatalf("GetAnswer of an unknown answer: ok %v, err %v", ok, err)
	}
	created := time.Date(2026, 11, 22, 12, 0, 0, 5, time.UTC)
	a := session.PagedAnswer{ID: idC, SessionID: idA, Owner: "token-id", Pages: []string{"page one\n", "page two, é", ""}, Created: created}
	if err := s.PutAnswer(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.GetAnswer(ctx, idC)
	if !ok || err != nil {
		t.Fatalf("GetAnswer: ok %v, err %v", ok, err)
	}
	checkAnswer(t, got, a)
	// An answer without a session.
	b := session.PagedAnswer{ID: idB, Pages: []string{"x", "y"}, Dropped: 7, Created: created}
	if err := s.PutAnswer(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, ok, err = s.GetAnswer(ctx, idB)
	if !ok || err != nil {
		t.Fatalf("GetAnswer of an answer without a session: ok %v, err %v", ok, err)
	}
	checkAnswer(t, got, b)
}

func checkAnswer(t *testing.T, got, want session.PagedAnswer) {
	t.Helper()
	if got.ID != want.ID || got.SessionID != want.SessionID || got.Owner != want.Owner || got.Dropped != want.Dropped ||
		!got.Created.Equal(want.Created) || fmt.Sprintf("%q", got.Pages) != fmt.Sprintf("%q", want.Pages) {
		t.Errorf("answer:\n got %+v\nwant %+v", got, want)
	}
}

func (c *conformance) answerBudget(t *testing.T) {
	opts := defaults
	opts.MaxPagedBytes = 100
	s, ctx := c.store(t, opts), ctxT(t)
	page := strings.Repeat("p", 20)
	put := func(i int, pages ...string) {
		t.Helper()
		if err := s.PutAnswer(ctx, session.PagedAnswer{ID: uuid(i), SessionID: idA, Pages: pages, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(i int) bool {
		t.Helper()
		_, ok, err := s.GetAnswer(ctx, uuid(i))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	put(1, page, page) // 40 bytes
	put(2, page, page) // 80
	if !kept(1) || !kept(2) {
		t.Fatal("answers within the budget were dropped")
	}
	put(3, page, page) // 120: the oldest goes
	if kept(1) || !kept(2) || !kept(3) {
		t.Fatalf("over the budget: kept 1 %v, 2 %v, 3 %v; want only the oldest dropped", kept(1), kept(2), kept(3))
	}
	put(4, page, page, page, page) // 80 more: 2 and 3 go
	if kept(2) || kept(3) || !kept(4) {
		t.Fatalf("a large answer: kept 2 %v, 3 %v, 4 %v; want the older ones dropped", kept(2), kept(3), kept(4))
	}
	// An answer larger than the whole budget keeps its first pages, and
	// says how many bytes it lost.
	put(5, page, page, page, page, page, page, page) // 140
	a, ok, err := s.GetAnswer(ctx, uuid(5))
	if !ok || err != nil {
		t.Fatalf("an answer larger than the budget: ok %v, err %v", ok, err)
	}
	n := 0
	for i, p := range a.Pages {
		if p != page {
			t.Fatalf("page %d of the cut answer is %q", i+1, p)
		}
		n += len(p)
	}
	if len(a.Pages) == 0 || n > 100 || n+a.Dropped != 140 {
		t.Fatalf("the cut answer keeps %d pages (%d bytes) and says %d were dropped; want its first pages within 100 bytes, and the rest of 140 dropped", len(a.Pages), n, a.Dropped)
	}
	if kept(4) {
		t.Fatal("an older answer survived an answer that fills the budget")
	}
}
