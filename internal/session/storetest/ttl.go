package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

const shortTTL = time.Second

func (c *conformance) ttl(t *testing.T) {
	opts := defaults
	opts.TTL = shortTTL
	s, ctx := c.store(t, opts), ctxT(t)
	start := time.Now()
	if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/a"}, start); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(ctx, idA, json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: idC, SessionID: idA, Pages: []string{"p"}, Created: start}); err != nil {
		t.Fatal(err)
	}
	_, ok, err := s.Get(ctx, idA)
	if err != nil {
		t.Fatal(err)
	}
	// Only a check made within the TTL of the Touch can demand the session.
	if !ok && time.Since(start) < opts.TTL {
		t.Fatal("a session is gone right after its Touch")
	}
	waitFor(t, "the session expires", func() bool {
		_, ok, err := s.Get(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Errorf("the turns of an expired session: %s %v %v", turns, ok, err)
	}
	if _, ok, err := s.GetAnswer(ctx, idC); ok || err != nil {
		t.Errorf("the answer of an expired session: ok %v, err %v", ok, err)
	}
	if recs, _, err := s.List(ctx, session.Filter{Limit: 10}); len(recs) != 0 || err != nil {
		t.Errorf("List lists an expired session: %v %v", recs, err)
	}
	// An expired session is as unknown as one never recorded: a new turn
	// starts it afresh.
	r, err := s.Touch(ctx, idA, session.Turn{Cwd: "/new", Title: "new"}, time.Now())
	if err != nil || r.Turns != 1 || r.Title != "new" {
		t.Errorf("Touch of an expired session: %+v %v", r, err)
	}
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Errorf("the old turns of an expired session came back: %s %v %v", turns, ok, err)
	}
}

func (c *conformance) appendRestartsTTL(t *testing.T) {
	opts := defaults
	opts.TTL = shortTTL
	s, ctx := c.store(t, opts), ctxT(t)
	start := time.Now()
	if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/a"}, start); err != nil {
		t.Fatal(err)
	}
	// Append turns for three TTLs: each restarts the clock, so the session
	// must be there, whole, whenever it is checked within a TTL of the
	// write before the append (that write kept it alive up to the append,
	// and the append keeps it from then on).
	tick := time.NewTicker(opts.TTL / 5)
	defer tick.Stop()
	n, prev := 0, start
	for time.Since(start) < 3*opts.TTL {
		before := time.Now()
		if err := s.AppendTurn(ctx, idA, json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))); err != nil {
			t.Fatal(err)
		}
		n++
		_, ok, err := s.Get(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		turns, _, err := s.LoadTurns(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(prev) >= opts.TTL {
			// The machine stalled for a TTL between two writes, so the
			// session may rightly have expired before the append: start
			// it again and go on.
			if err := s.Delete(ctx, idA); err != nil {
				t.Fatal(err)
			}
			prev = time.Now()
			if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/a"}, prev); err != nil {
				t.Fatal(err)
			}
			n = 0
		} else {
			if !ok || len(turns) != n {
				t.Fatalf("%v after the Touch and within the TTL of the last write: record %v, %d of %d turns", time.Since(start), ok, len(turns), n)
			}
			prev = before
		}
		<-tick.C
	}
	waitFor(t, "the session expires after its last append", func() bool {
		_, ok, err := s.Get(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
}
