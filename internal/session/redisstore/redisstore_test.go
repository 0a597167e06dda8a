package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"
	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

func TestMain(m *testing.M) {
	if os.Getenv(envHelperURL) != "" {
		leaseHolder()
		return
	}
	leaktest.VerifyTestMain(m)
}

// open opens a Store on srv that is closed when t ends.
func open(t *testing.T, srv *redistest.Server, opts session.Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), srv.URL(0), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// plain is a client of srv for looking at the keys.
func plain(t *testing.T, srv *redistest.Server) *redis.Client { return plainB(t, srv) }

func plainB(t testing.TB, srv *redistest.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

func turn(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"role":"user","n":%d}`, i)) }

func TestRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	ctx := t.Context()
	id := session.NewUUID()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

	if _, ok, err := s.Get(ctx, id); ok || err != nil {
		t.Fatalf("Get of an unknown session: ok %v, %v", ok, err)
	}
	first := session.Turn{Cwd: "/a", Model: "m1", Owner: "tok", Client: "c1", Backend: "api",
		Title: "hello there", Host: "h1", SystemPrompt: "be brief"}
	r, err := s.Touch(ctx, id, first, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := session.Record{ID: id, Cwd: "/a", Model: "m1", Created: t0, Updated: t0, Turns: 1, Owner: "tok",
		LastClient: "c1", Backend: "api", Title: "hello there", Host: "h1", SystemPrompt: "be brief"}
	if r != want {
		t.Fatalf("Touch = %+v, want %+v", r, want)
	}
	later := session.Turn{Cwd: "/b", Client: "c2", Owner: "other", Backend: "cli", Title: "x", Host: "h2", SystemPrompt: "y"}
	r, err = s.Touch(ctx, id, later, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want.Cwd, want.LastClient, want.Updated, want.Turns = "/b", "c2", t0.Add(time.Minute), 2
	if r != want {
		t.Fatalf("second Touch = %+v, want %+v (first turn's owner, backend, title, host, prompt and model kept)", r, want)
	}
	if got, ok, err := s.Get(ctx, id); err != nil || !ok || got != want {
		t.Fatalf("Get = %+v, %v, %v; want %+v", got, ok, err, want)
	}

	if _, ok, err := s.LoadTurns(ctx, id); ok || err != nil {
		t.Fatalf("LoadTurns before any: ok %v, %v", ok, err)
	}
	for i := range 3 {
		if err := s.AppendTurn(ctx, id, turn(i)); err != nil {
			t.Fatal(err)
		}
	}
	turns, ok, err := s.LoadTurns(ctx, id)
	if err != nil || !ok || len(turns) != 3 || string(turns[2]) != string(turn(2)) {
		t.Fatalf("LoadTurns = %s, %v, %v", turns, ok, err)
	}
	if err := s.AppendTurn(ctx, id, json.RawMessage(`{"torn`)); err == nil {
		t.Error("AppendTurn of invalid JSON: no error")
	}

	a := session.PagedAnswer{ID: session.NewUUID(), SessionID: id, Pages: []string{"one", "two"}, Created: t0}
	if err := s.PutAnswer(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.GetAnswer(ctx, a.ID)
	if err != nil || !ok || !slices.Equal(got.Pages, a.Pages) || got.SessionID != id || !got.Created.Equal(t0) {
		t.Fatalf("GetAnswer = %+v, %v, %v", got, ok, err)
	}

	if err := s.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(ctx, id); ok {
		t.Error("record survives Delete")
	}
	if _, ok, _ := s.LoadTurns(ctx, id); ok {
		t.Error("turns survive Delete")
	}
	if _, ok, _ := s.GetAnswer(ctx, a.ID); ok {
		t.Error("answer survives Delete")
	}
	if err := s.Delete(ctx, id); err != nil {
		t.Errorf("Delete of a deleted session: %v", err)
	}

	for _, bad := range []string{"", "latest", strings.ToUpper(id), id + "x"} {
		if _, _, err := s.Get(ctx, bad); err == nil || errors.Is(err, session.ErrUnavailable) {
			t.Errorf("Get(%q): %v, want an id error", bad, err)
		}
		if err := s.AppendTurn(ctx, bad, turn(0)); err == nil {
			t.Errorf("AppendTurn(%q): no error", bad)
		}
		if _, err := s.Lease(ctx, bad); err == nil {
			t.Errorf("Lease(%q): no error", bad)
		}
	}
}

func TestPrefix(t *testing.T) {
	srv := redistest.Start(t)
	a := open(t, srv, session.Options{Prefix: "team-a:"})
	b := open(t, srv, session.Options{Prefix: "team-b:"})
	ctx := t.Context()
	id := session.NewUUID()
	if _, err := a.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Get(ctx, id); ok {
		t.Error("a store under another prefix sees the session")
	}
	if recs, _, _ := b.List(ctx, session.Filter{Limit: 10}); len(recs) != 0 {
		t.Errorf("a store under another prefix lists %v", recs)
	}
	keys := plain(t, srv).Keys(ctx, "*").Val()
	for _, k := range keys {
		if !strings.HasPrefix(k, "team-a:") {
			t.Errorf("key %q is not under the prefix team-a:", k)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = Open(ctx, "redis://"+addr+"/0", session.Options{})
	if !errors.Is(err, session.ErrUnavailable) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "start it") {
		t.Errorf("Open of a Redis that is not there: %v", err)
	}
	for _, bad := range []string{"http://127.0.0.1:6379", "redis://", "127.0.0.1:6379", "redis://127.0.0.1:6379/x", "unix:///tmp/redis.sock"} {
		if _, err := Open(ctx, bad, session.Options{}); err == nil || errors.Is(err, session.ErrUnavailable) {
			t.Errorf("Open(%q): %v, want a URL error", bad, err)
		}
	}
	if _, err := Open(ctx, "redis://u:secret@"+addr+"/0", session.Options{}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("an error shows the password: %v", err)
	}
	if _, err := Open(ctx, "redis://"+addr+"/0", session.Options{TTL: -time.Second}); err == nil {
		t.Error("a negative TTL: no error")
	}
}

// TestPassword checks the password from the URL and from REDIS_PASSWORD.
func TestPassword(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	c := plain(t, srv)
	if err := c.ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REDIS_PASSWORD", "")
	if _, err := Open(ctx, srv.URL(0), session.Options{}); !errors.Is(err, session.ErrUnavailable) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open without the password: %v", err)
	}
	u := strings.Replace(srv.URL(0), "redis://", "redis://:s3cret@", 1)
	s, err := Open(ctx, u, session.Options{})
	if err != nil {
		t.Fatalf("Open with the password in the URL: %v", err)
	}
	s.Close()
	t.Setenv("REDIS_PASSWORD", "s3cret")
	s, err = Open(ctx, srv.URL(0), session.Options{})
	if err != nil {
		t.Fatalf("Open with REDIS_PASSWORD: %v", err)
	}
	s.Close()
}

// TestRedisKilledAndRestarted kills Redis under a store: calls fail with
// ErrUnavailable within the client's timeouts, and once Redis is back on
// the same address the same store works again by itself.
func TestRedisKilledAndRestarted(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	ctx := t.Context()
	id := session.NewUUID()
	if _, err := s.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	calls := map[string]func() error{
		"Get":        func() error { _, _, err := s.Get(ctx, id); return err },
		"AppendTurn": func() error { return s.AppendTurn(ctx, id, turn(1)) },
		"Touch":      func() error { _, err := s.Touch(ctx, id, session.Turn{}, time.Now()); return err },
		"Lease":      func() error { _, err := s.Lease(ctx, id); return err },
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		// The bound is the client's: a dial and an I/O timeout, a retry.
		if took := time.Since(start); took > 2*(dialTimeout+ioTimeout) {
			t.Errorf("%s took %v with Redis down", name, took)
		}
		if !errors.Is(err, session.ErrUnavailable) || !strings.Contains(err.Error(), srv.Addr()) || !strings.Contains(err.Error(), "unreachable") {
			t.Errorf("%s with Redis down: %v; want ErrUnavailable naming %s", name, err, srv.Addr())
		}
	}
	srv.Restart()
	// Persistence is off: the restarted Redis is empty, and the store
	// carries on with it.
	if _, err := s.Touch(ctx, id, session.Turn{Cwd: "/b"}, time.Now()); err != nil {
		t.Fatalf("Touch after Redis came back: %v", err)
	}
	if r, ok, err := s.Get(ctx, id); err != nil || !ok || r.Cwd != "/b" {
		t.Fatalf("Get after Redis came back: %+v, %v, %v", r, ok, err)
	}
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatalf("Lease after Redis came back: %v", err)
	}
	release()
}

// TestTwoReplicas runs two stores on one Redis, as two server processes
// behind a load balancer: each sees what the other wrote, and their
// leases exclude each other.
func TestTwoReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a := open(t, srv, session.Options{})
	b := open(t, srv, session.Options{})
	ctx := t.Context()
	id := session.NewUUID()
	if _, err := a.Touch(ctx, id, session.Turn{Cwd: "/a", Title: "t"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); err != nil || r.Turns != 2 || r.Title != "t" {
		t.Fatalf("Touch on B: %+v, %v", r, err)
	}
	if recs, _, err := a.List(ctx, session.Filter{Limit: 10}); err != nil || len(recs) != 1 || recs[0].Turns != 2 {
		t.Fatalf("List on A: %+v, %v", recs, err)
	}
	if err := a.AppendTurn(ctx, id, turn(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendTurn(ctx, id, turn(2)); err != nil {
		t.Fatal(err)
	}
	if turns, _, err := a.LoadTurns(ctx, id); err != nil || len(turns) != 2 || string(turns[1]) != string(turn(2)) {
		t.Fatalf("LoadTurns on A: %s, %v", turns, err)
	}
	ans := session.PagedAnswer{ID: session.NewUUID(), SessionID: id, Pages: []string{"p1", "p2"}}
	if err := b.PutAnswer(ctx, ans); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := a.GetAnswer(ctx, ans.ID); err != nil || !ok || len(got.Pages) != 2 {
		t.Fatalf("GetAnswer on A: %+v, %v, %v", got, ok, err)
	}

	// Concurrent Touches on both count every turn.
	const n = 20
	errs := make(chan error, 2*n)
	for range n {
		go func() { _, err := a.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); errs <- err }()
		go func() { _, err := b.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); errs <- err }()
	}
	for range 2 * n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if r, _, _ := a.Get(ctx, id); r.Turns != 2+2*n {
		t.Errorf("after %d concurrent Touches on two stores, %d turns, want %d", 2*n, r.Turns, 2+2*n)
	}

	release, err := a.Lease(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = b.Lease(short, id)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("B took the lease A holds: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		rel, err := b.Lease(ctx, id)
		if err == nil {
			rel()
		}
		got <- err
	}()
	release()
	if err := <-got; err != nil {
		t.Fatalf("B's Lease after A released: %v", err)
	}
}

// TestCallerDeadline checks that a call cut short by its caller's
// deadline reports that deadline, not Redis failing: Redis is paused
// (CLIENT PAUSE) so that the call is still waiting when the deadline
// comes.
func TestCallerDeadline(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	c := plain(t, srv)
	id := session.NewUUID()
	if _, err := s.Touch(t.Context(), id, session.Turn{Cwd: "/a"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := c.ClientPause(t.Context(), time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	defer c.ClientUnpause(context.Background())
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, _, err := s.Get(ctx, id)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("Get past the caller's deadline: %v; want the deadline, not ErrUnavailable", err)
	}
}
