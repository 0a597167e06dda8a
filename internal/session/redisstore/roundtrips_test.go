package redisstore

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// roundTrips counts the commands and pipelines the store sends, each a
// round trip it waits for (a pipeline a cluster splits by node goes to
// them at once: one wait).
type roundTrips struct{ n atomic.Int64 }

func (*roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// sessionTurn does what a turn of a session does with the store: take the
// lease, read the record (is the session known?) and the turns, append
// the turn, record it, keep a long answer's pages when answer is set,
// give the lease back.
func sessionTurn(t *testing.T, s *Store, id string, answer bool) {
	t.Helper()
	ctx := t.Context()
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	defer release()
	if _, _, err := s.Get(ctx, id); err != nil {
		t.Fatalf("Get: %v", err)
	}
	if _, _, err := s.LoadTurns(ctx, id); err != nil {
		t.Fatalf("LoadTurns: %v", err)
	}
	if err := s.AppendTurn(ctx, id, json.RawMessage(`{"role":"user","text":"hello"}`)); err != nil {
		t.Fatalf("AppendTurn: %v", err)
	}
	if answer {
		a := session.PagedAnswer{ID: session.NewUUID(), SessionID: id, Pages: []string{"page one", "page two"}}
		if err := s.PutAnswer(ctx, a); err != nil {
			t.Fatalf("PutAnswer: %v", err)
		}
	}
	if _, err := s.Touch(ctx, id, session.Turn{Client: "c", Cwd: "/w", Backend: "api"}, time.Now()); err != nil {
		t.Fatalf("Touch: %v", err)
	}
}

// TestRoundTripsPerTurn shows that a turn of a session costs the same
// round trips on one Redis as on a Redis Cluster: every key of a session
// on one slot keeps its scripts whole, and what spans slots (the indexes,
// the page budget) goes in one pipeline.
func TestRoundTripsPerTurn(t *testing.T) {
	single := redistest.Start(t)
	cluster := redistest.StartCluster(t, 3)
	type counts struct{ first, next, answer, answerAgain int64 }
	measure := func(url string) counts {
		opts := session.Options{TTL: time.Hour, LeaseTTL: time.Minute}
		s, err := Open(t.Context(), url, opts)
		if err != nil {
			t.Fatalf("Open %s: %v", url, err)
		}
		defer s.Close()
		// Each node loads each script once (EVALSHA, then EVAL): turns
		// of sessions enough to reach every node first.
		for range 30 {
			id := session.NewUUID()
			sessionTurn(t, s, id, true)
			sessionTurn(t, s, id, true)
		}
		rt := &roundTrips{}
		s.rdb.AddHook(rt)
		count := func(id string, answer bool) int64 {
			before := rt.n.Load()
			sessionTurn(t, s, id, answer)
			return rt.n.Load() - before
		}
		var c counts
		id := session.NewUUID()
		c.first = count(id, false)
		c.next = count(id, false)
		c.answer = count(id, true)
		c.answerAgain = count(id, true)
		return c
	}
	one, many := measure(single.URL(0)), measure(cluster.URL())
	t.Logf("round trips of a turn, one Redis %+v, cluster %+v", one, many)
	if one != many {
		t.Errorf("round trips of a turn: one Redis %+v, cluster %+v: want the same", one, many)
	}
	// The figures docs/operators.md gives.
	if want := (counts{first: 8, next: 8, answer: 11, answerAgain: 12}); one != want {
		t.Errorf("round trips of a turn on one Redis: %+v, want %+v (and update docs/operators.md)", one, want)
	}
}
