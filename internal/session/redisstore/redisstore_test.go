package redisstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Environment of the helper process that takes a lease and is killed.
const (
	envHelperURL = "GEMINI_MCP_REDISSTORE_HELPER_URL"
	envHelperID  = "GEMINI_MCP_REDISSTORE_HELPER_ID"
	envHelperTTL = "GEMINI_MCP_REDISSTORE_HELPER_LEASE_TTL"
)

func TestMain(m *testing.M) {
	if os.Getenv(envHelperURL) != "" {
		leaseHolder()
		return
	}
	goleak.VerifyTestMain(m)
}

// leaseHolder is the helper process: it takes a session's lease, says so
// on stdout, and holds it until killed.
func leaseHolder() {
	ttl, err := time.ParseDuration(os.Getenv(envHelperTTL))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv(envHelperURL), session.Options{LeaseTTL: ttl})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if _, err := s.Lease(ctx, os.Getenv(envHelperID)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("held")
	// Hold until killed: stdin is a pipe the parent never writes.
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(3)
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

func TestList(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	ctx := t.Context()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 250 { // more than one batch of the index
		id := session.NewUUID()
		ids = append(ids, id)
		if _, err := s.Touch(ctx, id, session.Turn{Cwd: fmt.Sprintf("/d%d", i%2)}, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	recs, more, err := s.List(ctx, session.Filter{Limit: 3})
	if err != nil || !more || len(recs) != 3 || recs[0].ID != ids[249] || recs[2].ID != ids[247] {
		t.Fatalf("List(0,3): %d records, more %v, %v", len(recs), more, err)
	}
	recs, more, err = s.List(ctx, session.Filter{Cwd: "/d1", Offset: 120, Limit: 10})
	if err != nil || more || len(recs) != 5 || recs[0].ID != ids[9] || recs[4].ID != ids[1] {
		t.Fatalf("List(odd, 120, 10): %d records, more %v, %v", len(recs), more, err)
	}
	r, ok, err := session.Latest(ctx, s, session.Filter{Cwd: "/d0"})
	if err != nil || !ok || r.ID != ids[248] {
		t.Fatalf("Latest(/d0) = %s, %v, %v; want %s", r.ID, ok, err, ids[248])
	}

	// A record gone (expired) leaves its id in the index: List skips it
	// and prunes it.
	c := plain(t, srv)
	if err := c.Del(ctx, s.recordKey(ids[249])).Err(); err != nil {
		t.Fatal(err)
	}
	recs, _, err = s.List(ctx, session.Filter{Limit: 1})
	if err != nil || len(recs) != 1 || recs[0].ID != ids[248] {
		t.Fatalf("List after an expiry: %v, %v", recs, err)
	}
	if n := c.ZCard(ctx, s.indexKey()).Val(); n != 249 {
		t.Errorf("index has %d ids after List, want 249 (the expired one pruned)", n)
	}
	if _, _, err := s.List(ctx, session.Filter{Offset: -1, Limit: 1}); err == nil {
		t.Error("List with a negative offset: no error")
	}
}

// TestTTLOnKeys checks that every key of a session carries the TTL, and
// that a later turn restarts it for all of them.
func TestTTLOnKeys(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = time.Hour
	s := open(t, srv, session.Options{TTL: ttl})
	ctx := t.Context()
	c := plain(t, srv)
	id := session.NewUUID()
	if _, err := s.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(ctx, id, turn(1)); err != nil {
		t.Fatal(err)
	}
	a := session.PagedAnswer{ID: session.NewUUID(), SessionID: id, Pages: []string{"p"}}
	if err := s.PutAnswer(ctx, a); err != nil {
		t.Fatal(err)
	}
	keys := []string{s.recordKey(id), s.turnsKey(id), s.answersKey(id), s.answerKey(a.ID)}
	sameDeadline(t, c, keys)
	for _, k := range keys {
		if !strings.HasPrefix(k, config.DefaultStorePrefix) {
			t.Errorf("key %q is not under the default prefix %q", k, config.DefaultStorePrefix)
		}
		if d := c.PTTL(ctx, k).Val(); d <= 0 || d > ttl {
			t.Errorf("PTTL %s = %v, want in (0, %v]", k, d, ttl)
		}
	}
	// Shorten every TTL behind the store's back: the next turn must
	// restart all of them.
	const short = 30 * time.Second
	for _, k := range keys {
		c.PExpire(ctx, k, short)
	}
	if err := s.AppendTurn(ctx, id, turn(2)); err != nil {
		t.Fatal(err)
	}
	sameDeadline(t, c, keys)
	for _, k := range keys {
		if d := c.PTTL(ctx, k).Val(); d <= short || d > ttl {
			t.Errorf("after AppendTurn, PTTL %s = %v, want in (%v, %v]", k, d, short, ttl)
		}
	}
	for _, k := range keys {
		c.PExpire(ctx, k, short)
	}
	if _, err := s.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if d := c.PTTL(ctx, k).Val(); d <= short || d > ttl {
			t.Errorf("after Touch, PTTL %s = %v, want in (%v, %v]", k, d, short, ttl)
		}
	}
	// The indexes outlive the session by a TTL (a PutAnswer or an
	// AppendTurn after the Touch restarts the session's), and end.
	rec := c.PTTL(ctx, s.recordKey(id)).Val()
	for _, k := range []string{s.indexKey(), s.ownerKey(""), s.clientKey(""), s.cwdKey("/a")} {
		if d := c.PTTL(ctx, k).Val(); d <= rec || d > 2*ttl {
			t.Errorf("PTTL of the index %s = %v, want in (%v, %v]", k, d, rec, 2*ttl)
		}
	}
}

// sameDeadline checks that keys expire at one instant: no part of a
// session outlives the rest.
func sameDeadline(t *testing.T, c *redis.Client, keys []string) {
	t.Helper()
	var first time.Duration
	for i, k := range keys {
		at, err := c.PExpireTime(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = at
		} else if at != first {
			t.Errorf("%s expires at %v, %s at %v: a session's keys must expire together", k, at, keys[0], first)
		}
	}
}

// TestExpiry lets a session expire in Redis (waiting for Redis's own
// expiry event, not for a clock) and checks that the store then knows
// nothing of it.
func TestExpiry(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 200 * time.Millisecond
	s := open(t, srv, session.Options{TTL: ttl})
	ctx := t.Context()
	c := plain(t, srv)
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err(); err != nil {
		t.Fatal(err)
	}
	sub := c.Subscribe(ctx, "__keyevent@0__:expired")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	id := session.NewUUID()
	if _, err := s.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(ctx, id, turn(1)); err != nil {
		t.Fatal(err)
	}
	a := session.PagedAnswer{ID: session.NewUUID(), SessionID: id, Pages: []string{"p"}}
	if err := s.PutAnswer(ctx, a); err != nil {
		t.Fatal(err)
	}
	expired := map[string]bool{}
	want := []string{s.recordKey(id), s.turnsKey(id), s.answerKey(a.ID)}
	for !expired[want[0]] || !expired[want[1]] || !expired[want[2]] {
		m, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		expired[m.Payload] = true
	}
	if _, ok, err := s.Get(ctx, id); ok || err != nil {
		t.Errorf("Get after expiry: ok %v, %v", ok, err)
	}
	if _, ok, err := s.LoadTurns(ctx, id); ok || err != nil {
		t.Errorf("LoadTurns after expiry: ok %v, %v", ok, err)
	}
	if _, ok, err := s.GetAnswer(ctx, a.ID); ok || err != nil {
		t.Errorf("GetAnswer after expiry: ok %v, %v", ok, err)
	}
	if recs, _, err := s.List(ctx, session.Filter{Limit: 10}); len(recs) != 0 || err != nil {
		t.Errorf("List after expiry: %v, %v", recs, err)
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

// TestPageBudget checks that the oldest answers go first when the pages
// outgrow the budget, across sessions, and that an answer larger than the
// whole budget keeps its first pages.
func TestPageBudget(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{MaxPagedBytes: 100})
	ctx := t.Context()
	page := strings.Repeat("x", 40)
	var ids []string
	for i := range 4 {
		sid := ""
		if i%2 == 0 {
			sid = session.NewUUID()
		}
		a := session.PagedAnswer{ID: session.NewUUID(), SessionID: sid, Pages: []string{page}}
		ids = append(ids, a.ID)
		if err := s.PutAnswer(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		_, ok, err := s.GetAnswer(ctx, id)
		if err != nil || ok != (i >= 2) {
			t.Errorf("answer %d: kept %v, %v; want the two newest kept", i, ok, err)
		}
	}
	big := session.PagedAnswer{ID: session.NewUUID(), Pages: []string{page, page, page, page}}
	if err := s.PutAnswer(ctx, big); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.GetAnswer(ctx, big.ID)
	if err != nil || !ok || len(got.Pages) != 2 || got.Dropped != 80 {
		t.Fatalf("a too-large answer: %d pages, dropped %d, %v, %v; want 2 pages, 80 dropped", len(got.Pages), got.Dropped, ok, err)
	}
	if _, ok, _ := s.GetAnswer(ctx, ids[3]); ok {
		t.Error("older answers kept beside one filling the budget")
	}
	if n := plain(t, srv).Get(ctx, s.prefix+"pagebytes").Val(); n != "80" {
		t.Errorf("pagebytes = %s, want 80", n)
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

// TestLeaseRenewedAndHandedOver holds a lease far longer than its TTL
// (seen through its renewals) while a waiter in the same process waits,
// then releases it: the waiter takes it.
func TestLeaseRenewedAndHandedOver(t *testing.T) {
	srv := redistest.Start(t)
	const leaseTTL = 600 * time.Millisecond
	s := open(t, srv, session.Options{LeaseTTL: leaseTTL})
	ctx := t.Context()
	c := plain(t, srv)
	id := session.NewUUID()
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		rel, err := s.Lease(ctx, id)
		if err == nil {
			defer rel()
		}
		got <- err
	}()
	// Wait for four renewals (PTTL going up again): without renewal the
	// lease would have expired before the fourth.
	last := c.PTTL(ctx, s.leaseKey(id)).Val()
	for renewals := 0; renewals < 4; {
		d := c.PTTL(ctx, s.leaseKey(id)).Val()
		if d <= 0 {
			t.Fatalf("the held lease expired (PTTL %v) after %d renewals", d, renewals)
		}
		if d > last {
			renewals++
		}
		last = d
		select {
		case err := <-got:
			t.Fatalf("the waiter got the held lease: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if d := c.PTTL(ctx, s.leaseKey(id)).Val(); d > leaseTTL {
		t.Errorf("lease PTTL %v > lease TTL %v", d, leaseTTL)
	}
	release()
	release() // a second release does nothing
	if err := <-got; err != nil {
		t.Fatalf("the waiter after release: %v", err)
	}
}

// TestLeaseOfKilledHolder takes a lease in another process, kills it with
// SIGKILL (no release, no Close) and checks that this process takes the
// lease once it expires.
func TestLeaseOfKilledHolder(t *testing.T) {
	srv := redistest.Start(t)
	const leaseTTL = 500 * time.Millisecond
	s := open(t, srv, session.Options{LeaseTTL: leaseTTL})
	ctx := t.Context()
	id := session.NewUUID()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelperURL+"="+srv.URL(0), envHelperID+"="+id, envHelperTTL+"="+leaseTTL.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "held\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q, %v; stderr:\n%s", line, err, stderr.String())
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = s.Lease(short, id)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("took the lease the helper holds: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	start := time.Now()
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatalf("Lease after its holder was killed: %v", err)
	}
	defer release()
	if took := time.Since(start); took > leaseTTL+5*time.Second {
		t.Errorf("took %v to get a dead holder's lease of TTL %v", took, leaseTTL)
	}
}

// TestCloseEndsWaitersAndLeases closes a store with a lease held and a
// waiter: the waiter returns, the lease is given back (another store
// takes it at once) and no goroutine is left (TestMain's goleak).
func TestCloseEndsWaitersAndLeases(t *testing.T) {
	srv := redistest.Start(t)
	s, err := Open(t.Context(), srv.URL(0), session.Options{LeaseTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	other := open(t, srv, session.Options{})
	ctx := t.Context()
	id := session.NewUUID()
	if _, err := s.Lease(ctx, id); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := s.Lease(ctx, id); got <- err }()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err == nil {
		t.Error("a waiter got a lease from a closed store")
	}
	release, err := other.Lease(ctx, id)
	if err != nil {
		t.Fatalf("the lease of a closed store: %v", err)
	}
	release()
	if _, _, err := s.Get(ctx, id); err == nil || errors.Is(err, session.ErrUnavailable) {
		t.Errorf("Get on a closed store: %v, want a plain error", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestLeaseWakesLocalWaiter checks that a release in this process wakes
// its waiters at once: with the tries of a waiter an hour apart, only the
// wake-up can hand the lease over.
func TestLeaseWakesLocalWaiter(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	const waiters = 3
	// Each waiter waits at most once per holder before it: room for
	// every signal.
	waiting := make(chan struct{}, waiters*(waiters+1))
	s.minWait, s.maxWait = time.Hour, time.Hour
	s.onWait = func() { waiting <- struct{}{} }
	// A guard against a waiter that is never woken.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	id := session.NewUUID()
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, waiters)
	for range waiters {
		go func() {
			rel, err := s.Lease(ctx, id)
			if err == nil {
				rel()
			}
			got <- err
		}()
	}
	for range waiters {
		<-waiting
	}
	release()
	for range waiters {
		if err := <-got; err != nil {
			t.Fatalf("a waiter after release: %v", err)
		}
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

// TestIndexOfEarlierVersion opens a Redis that an earlier version wrote:
// its records, in the index P sessions scored by Unix milliseconds, list
// by every filter, sessions a newer Touch indexed keep that, and the old
// index is left to expire.
func TestIndexOfEarlierVersion(t *testing.T) {
	srv := redistest.Start(t)
	c := plain(t, srv)
	ctx := t.Context()
	const prefix = config.DefaultStorePrefix
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 250 { // more than a batch
		r := session.Record{ID: session.NewUUID(), Cwd: "/a", Owner: []string{"", "o1"}[i%2], LastClient: "token:o1",
			Backend: "api", Created: base, Updated: base.Add(time.Duration(i) * time.Second), Turns: 1}
		data, _ := json.Marshal(r)
		if err := c.Set(ctx, prefix+"session:"+r.ID, data, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.ZAdd(ctx, prefix+"sessions", redis.Z{Score: float64(r.Updated.UnixMilli()), Member: r.ID}).Err(); err != nil {
			t.Fatal(err)
		}
		want = append([]string{r.ID}, want...)
	}
	// One gone (expired), one a newer version touched since.
	if err := c.ZAdd(ctx, prefix+"sessions", redis.Z{Score: 1, Member: session.NewUUID()}).Err(); err != nil {
		t.Fatal(err)
	}
	s := open(t, srv, session.Options{TTL: time.Hour})
	for _, f := range []session.Filter{{}, {Owner: "o1", ByOwner: true}, {Client: "token:o1"}} {
		f.Limit = 1000
		recs, _, err := s.List(ctx, f)
		if err != nil || len(recs) != len(want) || recs[0].ID != want[0] || recs[249].ID != want[249] {
			t.Fatalf("List(%+v) after the upgrade: %d records, %v; want %d", f, len(recs), err, len(want))
		}
	}
	if d := c.PTTL(ctx, prefix+"sessions").Val(); d <= 0 || d > time.Hour {
		t.Errorf("the old index's PTTL = %v, want in (0, 1h]", d)
	}
	moved, err := s.Touch(ctx, want[249], session.Turn{Cwd: "/b", Client: "mcp:y"}, base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// Opening again (another replica) reads the old index no more (a
	// process of the earlier version still adds to it), nor undoes the
	// newer Touch.
	if err := c.ZAdd(ctx, prefix+"sessions", redis.Z{Score: 2, Member: session.NewUUID()}).Err(); err != nil {
		t.Fatal(err)
	}
	c.PExpire(ctx, prefix+"sessions", time.Minute)
	s2 := open(t, srv, session.Options{TTL: time.Hour})
	if d := c.PTTL(ctx, prefix+"sessions").Val(); d <= 0 || d > time.Minute {
		t.Errorf("the old index's PTTL after a second Open = %v, want in (0, 1m]", d)
	}
	recs, _, err := s2.List(ctx, session.Filter{Limit: 1000})
	if err != nil || len(recs) != len(want) || recs[0].ID != moved.ID || recs[0].Cwd != "/b" {
		t.Fatalf("List after a Touch and a second Open: %d records, %v", len(recs), err)
	}
	if recs, _, err := s2.List(ctx, session.Filter{Client: "token:o1", Limit: 1000}); err != nil || len(recs) != len(want)-1 {
		t.Errorf("List of the old client after the session moved: %d records, %v; want %d", len(recs), err, len(want)-1)
	}
}
