package redisstore

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

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
