package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// failoverDeadline bounds a failover test's waits: a failure guard only.
const failoverDeadline = 60 * time.Second

// write appends a turn to session id and records it: acknowledged when
// both succeed.
func write(ctx context.Context, s *Store, id string, i int) error {
	if err := s.AppendTurn(ctx, id, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
		return err
	}
	_, err := s.Touch(ctx, id, session.Turn{Client: "c", Backend: "api"}, time.Now())
	return err
}

// checkAcknowledged fails t unless every acknowledged session has its
// record and its turn.
func checkAcknowledged(t *testing.T, ctx context.Context, s *Store, acked map[string]int) {
	t.Helper()
	for id, i := range acked {
		turns, ok, err := s.LoadTurns(ctx, id)
		if err != nil || !ok || len(turns) != 1 || string(turns[0]) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Errorf("session %s (write %d): turns %s, %v, %v", id, i, turns, ok, err)
		}
		if _, ok, err := s.Get(ctx, id); err != nil || !ok {
			t.Errorf("session %s (write %d): record %v, %v", id, i, ok, err)
		}
	}
}

// TestClusterNodeRestart kills a master of a 3-master cluster with
// SIGKILL between writes and restarts it with its nodes.conf and append-only file, as a
// managed cluster replaces a crashed node: the writes acknowledged before
// and after are all there after, and every write while it is down either
// succeeds (its slots are elsewhere) or fails with an error that says the
// store is unavailable, which a caller may retry.
func TestClusterNodeRestart(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), failoverDeadline)
	defer cancel()
	s, err := Open(ctx, c.URL(), session.Options{TTL: time.Hour})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	acked := map[string]int{}
	n := 0
	phase := func(what string, mustSucceed bool) (failed int) {
		for range 30 {
			n++
			id := session.NewUUID()
			err := write(ctx, s, id, n)
			switch {
			case err == nil:
				acked[id] = n
			case mustSucceed || !errors.Is(err, session.ErrUnavailable):
				t.Fatalf("%s: write %d: %v", what, n, err)
			default:
				failed++
			}
		}
		return failed
	}
	phase("before", true)

	down := c.Nodes[1]
	down.Kill()
	failed := phase("while a node is down", false)
	if failed == 0 {
		t.Fatalf("no write failed while node %s was down", down.Addr())
	}
	t.Logf("while a node was down: %d of 30 writes failed, all with session.ErrUnavailable", failed)

	down.Restart()
	if err := c.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	phase("after", true)
	checkAcknowledged(t, ctx, s, acked)
	if len(acked) < 60 {
		t.Fatalf("%d writes acknowledged, want at least 60", len(acked))
	}
}

// TestSentinelFailover switches the master that a sentinel watches to its
// replica: the store follows the sentinel to the new master, and keeps
// every write acknowledged before the switch (the replica had received
// them: asynchronous replication loses what it had not) and after it (once
// the old master replicates the new one: writes that reach the old master
// before that are dropped by its resync, see docs/operators.md).
func TestSentinelFailover(t *testing.T) {
	st := redistest.StartSentinel(t, 1, 1)
	ctx, cancel := context.WithTimeout(t.Context(), failoverDeadline)
	defer cancel()
	s, err := Open(ctx, st.URL(0), session.Options{TTL: time.Hour})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	acked := map[string]int{}
	for i := range 30 {
		id := session.NewUUID()
		if err := write(ctx, s, id, i); err != nil {
			t.Fatalf("before the switch: %v", err)
		}
		acked[id] = i
	}
	// A planned switch: the replica has every write first.
	if err := s.rdb.Do(ctx, "WAIT", 1, 10000).Err(); err != nil {
		t.Fatalf("WAIT: %v", err)
	}
	old, now, err := st.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("master switched from %s to %s", old.Addr(), now.Addr())
	retried := 0
	for i := 30; i < 60; i++ {
		id := session.NewUUID()
		for {
			err := write(ctx, s, id, i)
			if err == nil {
				break
			}
			if !errors.Is(err, session.ErrUnavailable) || ctx.Err() != nil {
				t.Fatalf("after the switch: write %d: %v", i, err)
			}
			retried++
		}
		acked[id] = i
	}
	t.Logf("after the switch: %d writes retried", retried)
	checkAcknowledged(t, ctx, s, acked)
	// The store writes to the new master.
	if role, err := s.rdb.Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "master" {
		t.Fatalf("ROLE through the store: %v, %v", role, err)
	}
}

// TestClusterReplicaFailover kills a master of a cluster of three masters
// with a replica each, once its replica has all it wrote: the replica
// takes its slots over, the store follows, and no acknowledged write is
// lost; while the master's slots have no master, writes to them fail as
// unavailable.
func TestClusterReplicaFailover(t *testing.T) {
	c := redistest.StartClusterReplicas(t, 3, 1)
	ctx, cancel := context.WithTimeout(t.Context(), failoverDeadline)
	defer cancel()
	s, err := Open(ctx, c.URL(), session.Options{TTL: time.Hour})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	acked := map[string]int{}
	n := 0
	phase := func(what string, mustSucceed bool) (failed int) {
		for range 30 {
			n++
			id := session.NewUUID()
			err := write(ctx, s, id, n)
			switch {
			case err == nil:
				acked[id] = n
			case mustSucceed || !errors.Is(err, session.ErrUnavailable):
				t.Fatalf("%s: write %d: %v", what, n, err)
			default:
				failed++
			}
		}
		return failed
	}
	phase("before", true)
	var down *redistest.Server
	for _, node := range c.Nodes {
		if role, err := node.Role(ctx); err == nil && role == "master" {
			down = node
			break
		}
	}
	if down == nil {
		t.Fatal("no master")
	}
	if err := down.WaitReplicated(ctx); err != nil {
		t.Fatal(err)
	}
	down.Kill()
	failed := phase("while a master is down", false)
	t.Logf("while a master was down: %d of 30 writes failed, all with session.ErrUnavailable", failed)
	if err := c.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	// A client retries a write that failed as unavailable: the first
	// after the switch may still go to the dead master.
	retried := 0
	retry := func(step func() error) {
		for {
			err := step()
			if err == nil {
				return
			}
			if !errors.Is(err, session.ErrUnavailable) || ctx.Err() != nil {
				t.Fatalf("after the replica took over: write %d: %v", n, err)
			}
			retried++
		}
	}
	for range 30 {
		n++
		id := session.NewUUID()
		retry(func() error { return s.AppendTurn(ctx, id, json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))) })
		retry(func() error {
			_, err := s.Touch(ctx, id, session.Turn{Client: "c", Backend: "api"}, time.Now())
			return err
		})
		acked[id] = n
	}
	t.Logf("after the replica took over: %d writes retried", retried)
	checkAcknowledged(t, ctx, s, acked)
}
