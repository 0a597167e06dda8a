package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

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
	if n := plain(t, srv).Get(ctx, s.pageKeys()[2]).Val(); n != "80" {
		t.Errorf("pagebytes = %s, want 80", n)
	}
}
