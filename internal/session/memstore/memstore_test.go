package memstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

const (
	idA = "b9aadb6c-5aca-4c65-b929-02b095cc2b94"
	idB = "a11a840f-092c-4b40-bb38-f8efd2d5e0b5"
	idC = "83762da1-bb59-4a1e-b6df-4c014f7112fe"
)

func open(t *testing.T, opts session.Options) *Store {
	s := New(opts)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestTouchKeepsFirstTurnFields(t *testing.T) {
	ctx := context.Background()
	s := open(t, session.Options{})
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	first := session.Turn{Cwd: "/w1", Model: "m1", Owner: "tok", Client: "token:tok", Backend: "api", Title: "hello there", Host: "h1", SystemPrompt: "be brief"}
	if _, err := s.Touch(ctx, idA, first, t0); err != nil {
		t.Fatal(err)
	}
	later := session.Turn{Cwd: "/w2", Owner: "other", Client: "mcp:x", Backend: "cli", Title: "no", Host: "h2", SystemPrompt: "no"}
	r, err := s.Touch(ctx, idA, later, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Get(ctx, idA)
	if err != nil || !ok || got != r {
		t.Fatalf("get: %+v %v %v, touch returned %+v", got, ok, err, r)
	}
	want := session.Record{ID: idA, Cwd: "/w2", Model: "m1", Created: t0, Updated: t0.Add(time.Minute), Turns: 2, Owner: "tok", LastClient: "mcp:x",
		Backend: "api", Title: "hello there", Host: "h1", SystemPrompt: "be brief"}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestInvalidIDs(t *testing.T) {
	ctx := context.Background()
	s := open(t, session.Options{})
	for _, id := range []string{strings.ToUpper(idA), "latest", "../x", ""} {
		if _, _, err := s.Get(ctx, id); err == nil {
			t.Errorf("Get(%q) accepted", id)
		}
		if _, err := s.Touch(ctx, id, session.Turn{}, time.Now()); err == nil {
			t.Errorf("Touch(%q) accepted", id)
		}
		if err := s.AppendTurn(ctx, id, json.RawMessage(`{}`)); err == nil {
			t.Errorf("AppendTurn(%q) accepted", id)
		}
		if _, _, err := s.LoadTurns(ctx, id); err == nil {
			t.Errorf("LoadTurns(%q) accepted", id)
		}
		if err := s.Delete(ctx, id); err == nil {
			t.Errorf("Delete(%q) accepted", id)
		}
		if _, err := s.Lease(ctx, id); err == nil {
			t.Errorf("Lease(%q) accepted", id)
		}
		if err := s.PutAnswer(ctx, session.PagedAnswer{ID: id, Pages: []string{"x"}}); err == nil {
			t.Errorf("PutAnswer(%q) accepted", id)
		}
		if _, _, err := s.GetAnswer(ctx, id); err == nil {
			t.Errorf("GetAnswer(%q) accepted", id)
		}
	}
	if recs, _, _ := s.List(ctx, session.Filter{Limit: 10}); len(recs) != 0 {
		t.Fatalf("invalid ids left records: %+v", recs)
	}
}

func TestListNewestFirstPaged(t *testing.T) {
	ctx := context.Background()
	s := open(t, session.Options{})
	t0 := time.Now()
	for i, id := range []string{idA, idB, idC} {
		if _, err := s.Touch(ctx, id, session.Turn{Cwd: fmt.Sprint("/w", i%2)}, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	// A session with turns but no record yet is not listed.
	if err := s.AppendTurn(ctx, session.NewUUID(), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	recs, more, err := s.List(ctx, session.Filter{Limit: 2})
	if err != nil || !more || len(recs) != 2 || recs[0].ID != idC || recs[1].ID != idB {
		t.Fatalf("first page: %+v %v %v", recs, more, err)
	}
	recs, more, err = s.List(ctx, session.Filter{Offset: 2, Limit: 2})
	if err != nil || more || len(recs) != 1 || recs[0].ID != idA {
		t.Fatalf("second page: %+v %v %v", recs, more, err)
	}
	recs, _, _ = s.List(ctx, session.Filter{Cwd: "/w0", Limit: 10})
	if len(recs) != 2 || recs[0].ID != idC || recs[1].ID != idA {
		t.Fatalf("matched: %+v", recs)
	}
	if r, ok, err := session.Latest(ctx, s, session.Filter{Cwd: "/w1"}); err != nil || !ok || r.ID != idB {
		t.Fatalf("latest in /w1: %+v %v %v", r, ok, err)
	}
}

func TestTurnsAndDelete(t *testing.T) {
	ctx := context.Background()
	s := open(t, session.Options{})
	if _, ok, err := s.LoadTurns(ctx, idA); ok || err != nil {
		t.Fatalf("no turns yet: %v %v", ok, err)
	}
	if err := s.AppendTurn(ctx, idA, json.RawMessage("not json")); err == nil {
		t.Fatal("a turn that is not JSON was accepted")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := s.AppendTurn(ctx, idA, json.RawMessage(fmt.Sprintf(`{ "n" : %d }`, i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	turns, ok, err := s.LoadTurns(ctx, idA)
	if err != nil || !ok || len(turns) != 8 {
		t.Fatalf("turns: %d %v %v", len(turns), ok, err)
	}
	for _, tr := range turns {
		if strings.Contains(string(tr), " ") {
			t.Fatalf("turn not compacted: %s", tr)
		}
	}
	if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/w"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: idB, SessionID: idA, Pages: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, idA); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(ctx, idA); ok {
		t.Fatal("record survived Delete")
	}
	if _, ok, _ := s.LoadTurns(ctx, idA); ok {
		t.Fatal("turns survived Delete")
	}
	if _, ok, _ := s.GetAnswer(ctx, idB); ok {
		t.Fatal("answer survived Delete")
	}
	if err := s.Delete(ctx, idC); err != nil {
		t.Fatalf("deleting an unknown session: %v", err)
	}
}

func TestAnswersBudget(t *testing.T) {
	ctx := context.Background()
	s := open(t, session.Options{MaxPagedBytes: 10})
	a1, a2, a3 := session.NewUUID(), session.NewUUID(), session.NewUUID()
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: a1, Pages: []string{"12345", "678"}}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.GetAnswer(ctx, a1)
	if err != nil || !ok || strings.Join(got.Pages, "|") != "12345|678" {
		t.Fatalf("round trip: %+v %v %v", got, ok, err)
	}
	// 8 + 4 bytes exceed the budget of 10: the oldest answer goes.
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: a2, Pages: []string{"abcd"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.GetAnswer(ctx, a1); ok {
		t.Fatal("the oldest answer was kept beyond the budget")
	}
	// An answer larger than the whole budget keeps its first pages.
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: a3, Pages: []string{"1234567", "89", "abcdef"}}); err != nil {
		t.Fatal(err)
	}
	got, ok, _ = s.GetAnswer(ctx, a3)
	if !ok || strings.Join(got.Pages, "|") != "1234567|89" || got.Dropped != 6 {
		t.Fatalf("oversized answer: %+v %v", got, ok)
	}
	if _, ok, _ := s.GetAnswer(ctx, a2); ok {
		t.Fatal("an older answer was kept beyond the budget")
	}
}

// TestTTL runs on synctest's clock: the store reads time.Now, which moves
// only when every goroutine of the bubble waits.
func TestTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := New(session.Options{TTL: time.Hour})
		defer s.Close()
		if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/w"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendTurn(ctx, idA, json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
		if err := s.PutAnswer(ctx, session.PagedAnswer{ID: idB, SessionID: idA, Pages: []string{"p"}}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutAnswer(ctx, session.PagedAnswer{ID: idC, Pages: []string{"p"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Minute)
		// A turn restarts the session's clock (and its answers').
		if err := s.AppendTurn(ctx, idA, json.RawMessage(`2`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Minute)
		if _, ok, _ := s.Get(ctx, idA); !ok {
			t.Fatal("the session expired although a turn restarted its clock")
		}
		if _, ok, _ := s.GetAnswer(ctx, idB); !ok {
			t.Fatal("the session's answer expired before the session")
		}
		if _, ok, _ := s.GetAnswer(ctx, idC); ok {
			t.Fatal("an answer without a session outlived the TTL")
		}
		time.Sleep(31 * time.Minute)
		if _, ok, _ := s.Get(ctx, idA); ok {
			t.Fatal("the session outlived its TTL")
		}
		if _, ok, _ := s.LoadTurns(ctx, idA); ok {
			t.Fatal("the turns outlived their session")
		}
		if _, ok, _ := s.GetAnswer(ctx, idB); ok {
			t.Fatal("the answer outlived its session")
		}
		if recs, _, _ := s.List(ctx, session.Filter{Limit: 10}); len(recs) != 0 {
			t.Fatalf("expired sessions listed: %+v", recs)
		}
		// A touch after expiry starts a new session, and the sweep has
		// forgotten the old one.
		r, err := s.Touch(ctx, idA, session.Turn{Cwd: "/w"}, time.Now())
		if err != nil || r.Turns != 1 {
			t.Fatalf("touch after expiry: %+v %v", r, err)
		}
		s.mu.Lock()
		n := len(s.answers)
		s.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d expired answers still held", n)
		}
	})
}

func TestLeaseWaitsForRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := New(session.Options{})
		defer s.Close()
		release, err := s.Lease(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		// Another session's lease does not wait.
		other, err := s.Lease(ctx, idB)
		if err != nil {
			t.Fatal(err)
		}
		other()
		got := make(chan func())
		go func() {
			r, err := s.Lease(ctx, idA)
			if err != nil {
				t.Error(err)
			}
			got <- r
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("a second holder took a held lease")
		default:
		}
		release()
		release() // harmless
		r2 := <-got
		r2()
		s.mu.Lock()
		n := len(s.leases)
		s.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d leases remembered after all were released", n)
		}
	})
}

func TestLeaseCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(session.Options{})
		defer s.Close()
		release, err := s.Lease(context.Background(), idA)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			_, err := s.Lease(ctx, idA)
			done <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait: %v", err)
		}
		release()
		// The cancelled waiter holds nothing: the lease is free.
		r, err := s.Lease(context.Background(), idA)
		if err != nil {
			t.Fatal(err)
		}
		r()
	})
}

func TestCloseGivesLeasesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := New(session.Options{})
		release, err := s.Lease(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			_, err := s.Lease(ctx, idA)
			done <- err
		}()
		synctest.Wait()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, session.ErrUnavailable) {
			t.Fatalf("a waiter at Close: %v", err)
		}
		release() // after Close: harmless
		if _, _, err := s.Get(ctx, idA); !errors.Is(err, session.ErrUnavailable) {
			t.Fatalf("Get after Close: %v", err)
		}
	})
}
