package redisstore

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestMigrateEarlierKeys writes a session as an earlier version did (keys
// without hash tags, the page budget's old names) and opens the store:
// the session, its turns and its answer are all there, with their TTLs,
// and it goes on.
func TestMigrateEarlierKeys(t *testing.T) {
	srv := redistest.Start(t)
	c := plain(t, srv)
	ctx := t.Context()
	const p = "gemini-mcp:"
	id, aid := session.NewUUID(), session.NewUUID()
	now := time.Now().Truncate(time.Microsecond)
	rec, _ := json.Marshal(session.Record{ID: id, Created: now, Updated: now, Turns: 1, LastClient: "c"})
	ans, _ := json.Marshal(session.PagedAnswer{ID: aid, SessionID: id, Pages: []string{"one", "two"}})
	for _, err := range []error{
		c.Set(ctx, p+"session:"+id, rec, time.Hour).Err(),
		c.RPush(ctx, p+"turns:"+id, `{"n":1}`).Err(),
		c.PExpire(ctx, p+"turns:"+id, time.Hour).Err(),
		c.SAdd(ctx, p+"answers:"+id, aid).Err(),
		c.PExpire(ctx, p+"answers:"+id, time.Hour).Err(),
		c.Set(ctx, p+"answer:"+aid, ans, time.Hour).Err(),
		c.ZAdd(ctx, p+"byupdate", redisZ(now, id)).Err(),
		c.ZAdd(ctx, p+"pages", redisZ(time.UnixMicro(-1), aid)).Err(),
		c.HSet(ctx, p+"pagesizes", aid, "6:"+id).Err(),
		c.Set(ctx, p+"pagebytes", "6", 0).Err(),
		c.Set(ctx, p+"pageseq", "1", 0).Err(),
		c.Set(ctx, p+"session:not-a-uuid", "other data", 0).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, srv, session.Options{})
	if r, ok, err := s.Get(ctx, id); err != nil || !ok || r.LastClient != "c" {
		t.Fatalf("Get after the rename: %+v, %v, %v", r, ok, err)
	}
	if turns, ok, err := s.LoadTurns(ctx, id); err != nil || !ok || len(turns) != 1 {
		t.Fatalf("LoadTurns after the rename: %s, %v, %v", turns, ok, err)
	}
	if a, ok, err := s.GetAnswer(ctx, aid); err != nil || !ok || len(a.Pages) != 2 {
		t.Fatalf("GetAnswer after the rename: %+v, %v, %v", a, ok, err)
	}
	for _, k := range []string{s.recordKey(id), s.turnsKey(id), s.answersKey(id), s.answerKey(aid)} {
		if d := c.PTTL(ctx, k).Val(); d <= 0 || d > time.Hour {
			t.Errorf("%s: TTL %v after the rename, want its old one", k, d)
		}
	}
	if n := c.Get(ctx, s.pageKeys()[2]).Val(); n != "6" {
		t.Errorf("the page budget's bytes after the rename: %q, want 6", n)
	}
	keys := c.Keys(ctx, "*").Val()
	for _, k := range keys {
		if strings.HasPrefix(k, p+"session:") && !strings.Contains(k, "{") && k != p+"session:not-a-uuid" || k == p+"pages" {
			t.Errorf("key %q of the earlier version is left", k)
		}
	}
	if err := s.AppendTurn(ctx, id, json.RawMessage(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	if turns, _, _ := s.LoadTurns(ctx, id); len(turns) != 2 {
		t.Fatalf("the session goes on: %s", turns)
	}
	if recs, _, err := s.List(ctx, session.Filter{Limit: 10}); err != nil || len(recs) != 1 || recs[0].ID != id {
		t.Fatalf("List after the rename: %v, %v", recs, err)
	}
	// Opening again renames nothing more and loses nothing.
	s2 := open(t, srv, session.Options{})
	if turns, _, _ := s2.LoadTurns(ctx, id); len(turns) != 2 {
		t.Fatalf("after a second Open: %s", turns)
	}
}

func redisZ(t time.Time, id string) redis.Z { return redis.Z{Score: score(t), Member: id} }

// TestMigrateWithoutScan: a user whose ACL forbids SCAN opens the store
// (the keys of earlier versions are then left as they are) and uses it.
func TestMigrateWithoutScan(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	if err := plain(t, srv).Do(ctx, "ACL", "SETUSER", "noscan", "on", ">pw-noscan", "~*", "+@all", "-scan").Err(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, "redis://noscan:pw-noscan@"+srv.Addr()+"/0", session.Options{})
	if err != nil {
		t.Fatalf("Open without SCAN: %v", err)
	}
	defer s.Close()
	id := session.NewUUID()
	if err := s.AppendTurn(ctx, id, json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if turns, ok, err := s.LoadTurns(ctx, id); err != nil || !ok || len(turns) != 1 {
		t.Fatalf("LoadTurns: %s, %v, %v", turns, ok, err)
	}
}
