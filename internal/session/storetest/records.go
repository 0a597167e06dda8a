package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

func (c *conformance) touchAndGet(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	if _, ok, err := s.Get(ctx, idA); ok || err != nil {
		t.Fatalf("Get of a session never recorded: ok %v, err %v", ok, err)
	}
	t1 := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	first := session.Turn{Cwd: "/a", Model: "m1", Owner: "owner1", Client: "mcp:one", Backend: "api",
		Title: "How do I", Host: "host1", SystemPrompt: "Be brief."}
	r, err := s.Touch(ctx, idA, first, t1)
	if err != nil {
		t.Fatal(err)
	}
	want := session.Record{ID: idA, Cwd: "/a", Model: "m1", Created: t1, Updated: t1, Turns: 1, Owner: "owner1",
		LastClient: "mcp:one", Backend: "api", Title: "How do I", Host: "host1", SystemPrompt: "Be brief."}
	checkRecord(t, "Touch's first record", r, want)
	got, ok, err := s.Get(ctx, idA)
	if !ok || err != nil {
		t.Fatalf("Get after Touch: ok %v, err %v", ok, err)
	}
	checkRecord(t, "Get after the first Touch", got, want)

	// A later turn changes what a turn may change and keeps the rest from
	// the first turn; a turn without a model keeps the last one.
	t2 := t1.Add(time.Minute)
	later := session.Turn{Cwd: "/b", Owner: "owner2", Client: "token:two", Backend: "cli",
		Title: "Other words", Host: "host2", SystemPrompt: "Be long."}
	r, err = s.Touch(ctx, idA, later, t2)
	if err != nil {
		t.Fatal(err)
	}
	want.Cwd, want.LastClient, want.Updated, want.Turns = "/b", "token:two", t2, 2
	checkRecord(t, "Touch's second record", r, want)
	got, _, err = s.Get(ctx, idA)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, "Get after the second Touch", got, want)

	t3 := t2.Add(time.Minute)
	later.Model = "m3"
	if r, err = s.Touch(ctx, idA, later, t3); err != nil {
		t.Fatal(err)
	}
	want.Model, want.Updated, want.Turns = "m3", t3, 3
	checkRecord(t, "Touch's third record", r, want)
	got, _, err = s.Get(ctx, idA)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, "Get after the third Touch", got, want)

	// Other sessions are untouched.
	if _, ok, err := s.Get(ctx, idB); ok || err != nil {
		t.Fatalf("Get of another session: ok %v, err %v", ok, err)
	}
}

func checkRecord(t *testing.T, what string, got, want session.Record) {
	t.Helper()
	if !got.Created.Equal(want.Created) || !got.Updated.Equal(want.Updated) {
		t.Errorf("%s: created %v updated %v, want %v and %v", what, got.Created, got.Updated, want.Created, want.Updated)
	}
	got.Created, got.Updated, want.Created, want.Updated = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func (c *conformance) concurrentTouch(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				now := time.Now()
				if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/a", Client: fmt.Sprintf("mcp:%d-%d", w, i)}, now); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r, ok, err := s.Get(ctx, idA)
	if !ok || err != nil {
		t.Fatalf("Get: ok %v, err %v", ok, err)
	}
	if r.Turns != workers*each {
		t.Fatalf("%d concurrent touches counted %d turns", workers*each, r.Turns)
	}
}

func (c *conformance) invalidIDs(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	bad := []string{strings.ToUpper(idA), "not-a-uuid", "../x", "", idA + "/../" + idB, " " + idA}
	turn := json.RawMessage(`{"a":1}`)
	for _, id := range bad {
		check := func(method string, err error) {
			t.Helper()
			if err == nil {
				t.Errorf("%s(%q) accepted the id", method, id)
			} else if errors.Is(err, session.ErrUnavailable) {
				t.Errorf("%s(%q): a bad id is the caller's error, not the store's: %v", method, id, err)
			}
		}
		_, _, err := s.Get(ctx, id)
		check("Get", err)
		_, err = s.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now())
		check("Touch", err)
		check("Delete", s.Delete(ctx, id))
		_, _, err = s.LoadTurns(ctx, id)
		check("LoadTurns", err)
		check("AppendTurn", s.AppendTurn(ctx, id, turn))
		check("PutAnswer with that answer id", s.PutAnswer(ctx, session.PagedAnswer{ID: id, Pages: []string{"p"}, Created: time.Now()}))
		if id != "" { // "" is an answer without a session
			check("PutAnswer with that session id", s.PutAnswer(ctx, session.PagedAnswer{ID: idC, SessionID: id, Pages: []string{"p"}, Created: time.Now()}))
		}
		_, _, err = s.GetAnswer(ctx, id)
		check("GetAnswer", err)
		release, err := s.Lease(ctx, id)
		check("Lease", err)
		if err == nil {
			release()
		}
	}
	// Nothing was recorded, under any spelling.
	if recs, _, err := s.List(ctx, session.Filter{Limit: 100}); len(recs) != 0 || err != nil {
		t.Errorf("List after bad ids: %v %v", recs, err)
	}
	for _, id := range []string{idA, idB} {
		if _, ok, err := s.Get(ctx, id); ok || err != nil {
			t.Errorf("Get(%s) after bad ids: ok %v, err %v", id, ok, err)
		}
		if turns, ok, err := s.LoadTurns(ctx, id); ok || len(turns) != 0 || err != nil {
			t.Errorf("LoadTurns(%s) after bad ids: %v %v %v", id, turns, ok, err)
		}
	}
	if _, ok, err := s.GetAnswer(ctx, idC); ok || err != nil {
		t.Errorf("GetAnswer(%s) after bad ids: ok %v, err %v", idC, ok, err)
	}
}

func (c *conformance) delete(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	if err := s.Delete(ctx, idA); err != nil {
		t.Fatalf("Delete of a session that does not exist: %v", err)
	}
	for _, id := range []string{idA, idB} {
		if _, err := s.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendTurn(ctx, id, json.RawMessage(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	ansA, ansB := uuid(100), uuid(101)
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: ansA, SessionID: idA, Pages: []string{"a1", "a2"}, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: ansB, SessionID: idB, Pages: []string{"b1", "b2"}, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, idA); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Get(ctx, idA); ok || err != nil {
		t.Errorf("Get after Delete: ok %v, err %v", ok, err)
	}
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Errorf("LoadTurns after Delete: %s %v %v", turns, ok, err)
	}
	if _, ok, err := s.GetAnswer(ctx, ansA); ok || err != nil {
		t.Errorf("GetAnswer of the deleted session's answer: ok %v, err %v", ok, err)
	}
	if recs, _, err := s.List(ctx, session.Filter{Limit: 10}); err != nil || len(recs) != 1 || recs[0].ID != idB {
		t.Errorf("List after Delete: %v %v", recs, err)
	}
	// The other session keeps everything.
	if _, ok, err := s.Get(ctx, idB); !ok || err != nil {
		t.Errorf("Get of the other session: ok %v, err %v", ok, err)
	}
	if turns, ok, err := s.LoadTurns(ctx, idB); !ok || len(turns) != 1 || err != nil {
		t.Errorf("LoadTurns of the other session: %s %v %v", turns, ok, err)
	}
	if _, ok, err := s.GetAnswer(ctx, ansB); !ok || err != nil {
		t.Errorf("GetAnswer of the other session's answer: ok %v, err %v", ok, err)
	}
	// A deleted session starts afresh.
	r, err := s.Touch(ctx, idA, session.Turn{Cwd: "/c"}, time.Now())
	if err != nil || r.Turns != 1 || r.Cwd != "/c" {
		t.Errorf("Touch after Delete: %+v %v", r, err)
	}
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Errorf("LoadTurns after Delete and Touch: %s %v %v", turns, ok, err)
	}
}
