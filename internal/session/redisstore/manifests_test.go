package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifesttest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestManifestsConformance: two stores on one Redis stand for two
// replicas; one of them is reached as the server reaches it (manifest.Of,
// through session.Observed).
func TestManifestsConformance(t *testing.T) {
	srv := redistest.Start(t)
	runManifests(t, srv.URL(0))
}

// TestManifestsConformanceCluster: the same on a cluster of three
// masters, where each script must find a manifest's keys on one slot.
func TestManifestsConformanceCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	runManifests(t, c.URL())
}

// runManifests runs the suite on the Redis at url, each test's pair of
// stores under a prefix of its own, so that each starts empty.
func runManifests(t *testing.T, url string) {
	var n atomic.Int64
	manifesttest.Run(t, func(t *testing.T) (manifest.Manifests, manifest.Manifests) {
		opts := session.Options{Prefix: fmt.Sprintf("fsm%d:", n.Add(1))}
		var pair [2]*Store
		for i := range pair {
			s, err := Open(t.Context(), url, opts)
			if err != nil {
				t.Fatalf("Open %s: %v", url, err)
			}
			t.Cleanup(func() { s.Close() })
			pair[i] = s
		}
		return manifest.Of(session.Observed(pair[0], func(string, time.Duration, error) {})), pair[1].Manifests()
	})
}

// TestManifestsSurviveRestart: a manifest one server wrote half-way (an
// index cut short) is whole for a server started later on the Redis.
func TestManifestsSurviveRestart(t *testing.T) {
	srv := redistest.Start(t)
	a := open(t, srv, session.Options{})
	k, used := "/work/repo\x00token:alice", time.UnixMilli(time.Now().UnixMilli())
	if err := a.Manifests().SetStore(t.Context(), k, "fileSearchStores/s1", used); err != nil {
		t.Fatal(err)
	}
	manifesttest.Fill(t, a.Manifests(), k, 12)
	a.Close()
	b := open(t, srv, session.Options{})
	r, err := b.Manifests().Get(t.Context(), k)
	if err != nil || r.Store != "fileSearchStores/s1" || !r.Used.Equal(used) || len(r.Files) != 12 || r.Files[manifesttest.Path(5)] != manifesttest.Entry(5) {
		t.Fatalf("after a restart: %+v, %v", r, err)
	}
}

// TestManifestsKeys: a manifest's keys are the documented ones, its two
// on one slot, none expiring; Remove leaves none.
func TestManifestsKeys(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{Prefix: "p:"})
	c := plain(t, srv)
	ctx, k := t.Context(), "/work/repo\x00token:alice"
	m := s.Manifests()
	if err := m.SetStore(ctx, k, "fileSearchStores/s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := m.PutFile(ctx, k, "a.go", manifesttest.Entry(1)); err != nil {
		t.Fatal(err)
	}
	h := manifestHash(k)
	want := []string{"p:manifest:{" + h + "}", "p:manifestfiles:{" + h + "}", "p:manifests"}
	keys := c.Keys(ctx, "p:*").Val()
	if strings.Join(sorted(keys), " ") != strings.Join(want, " ") {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	for _, key := range keys {
		if ttl := c.PTTL(ctx, key).Val(); ttl != -1 {
			t.Errorf("%s expires (PTTL %v): a manifest is kept until removed", key, ttl)
		}
	}
	if err := m.Remove(ctx, k); err != nil {
		t.Fatal(err)
	}
	if keys := c.Keys(ctx, "p:*").Val(); len(keys) != 0 {
		t.Fatalf("keys after Remove: %q", keys)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestManifestsRedisDown: with Redis gone, every call fails at once with
// the store's unavailable error.
func TestManifestsRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	m, k := s.Manifests(), "/w\x00token:a"
	ctx := t.Context()
	if err := m.SetStore(ctx, k, "fileSearchStores/s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	calls := map[string]func() error{
		"Get":        func() error { _, err := m.Get(ctx, k); return err },
		"SetStore":   func() error { return m.SetStore(ctx, k, "fileSearchStores/s1", time.Now()) },
		"PutFile":    func() error { return m.PutFile(ctx, k, "a.go", manifesttest.Entry(1)) },
		"DeleteFile": func() error { return m.DeleteFile(ctx, k, "a.go") },
		"Remove":     func() error { return m.Remove(ctx, k) },
		"List":       func() error { _, err := m.List(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, session.ErrUnavailable) {
			t.Errorf("%s with Redis down: %v, want the store unavailable", name, err)
		}
	}
}

// BenchmarkManifests20000 measures a manifest of 20,000 files, as a large
// root's index keeps it: filling it (eight callers at once, as an index's
// uploads finish), a file's PutFile into it (a changed file: its entry
// replaced) and a Get of all of it, with the round trips of each (rt/op)
// and the memory it takes in Redis.
func BenchmarkManifests20000(b *testing.B) {
	srv := redistest.Start(b)
	s, err := Open(context.Background(), srv.URL(0), session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := plainB(b, srv)
	usedMemory := func() float64 {
		text := c.Info(context.Background(), "memory").Val()
		for line := range strings.SplitSeq(text, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, _ := strconv.ParseFloat(v, 64)
				return n
			}
		}
		b.Fatal("no used_memory in INFO")
		return 0
	}
	m, k := s.Manifests(), "/work/big\x00token:alice"
	ctx := context.Background()
	if err := m.SetStore(ctx, k, "fileSearchStores/big", time.Now()); err != nil {
		b.Fatal(err)
	}
	before := usedMemory()
	start := time.Now()
	manifesttest.Fill(b, m, k, 20_000)
	fill := time.Since(start)
	bytes := usedMemory() - before
	rt := &roundTrips{}
	s.rdb.AddHook(rt)
	b.Run("put", func(b *testing.B) {
		n0, i := rt.n.Load(), 0
		for b.Loop() {
			if err := m.PutFile(ctx, k, manifesttest.Path(i%20_000), manifesttest.Entry(i+1)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(rt.n.Load()-n0)/float64(i), "rt/op")
		b.ReportMetric(fill.Seconds(), "fill20000-s")
		b.ReportMetric(bytes/20_000, "redis-B/file")
	})
	b.Run("get", func(b *testing.B) {
		n0, i := rt.n.Load(), 0
		for b.Loop() {
			r, err := m.Get(ctx, k)
			if err != nil || len(r.Files) != 20_000 {
				b.Fatalf("Get: %d files, %v", len(r.Files), err)
			}
			i++
		}
		b.ReportMetric(float64(rt.n.Load()-n0)/float64(i), "rt/op")
	})
}

// TestManifestRoundTrips: each call costs the round trips manifests.go
// gives, on one Redis and on a cluster alike.
func TestManifestRoundTrips(t *testing.T) {
	single := redistest.Start(t)
	cluster := redistest.StartCluster(t, 3)
	want := map[string]int64{"SetStore": 2, "PutFile": 1, "Get": 1, "DeleteFile": 1, "List": 2, "Remove": 2}
	for name, url := range map[string]string{"one Redis": single.URL(0), "cluster": cluster.URL()} {
		s, err := Open(t.Context(), url, session.Options{})
		if err != nil {
			t.Fatalf("Open %s: %v", url, err)
		}
		defer s.Close()
		m, ctx := s.Manifests(), t.Context()
		calls := []struct {
			name string
			call func(k string) error
		}{
			{"SetStore", func(k string) error { return m.SetStore(ctx, k, "fileSearchStores/s1", time.Now()) }},
			{"PutFile", func(k string) error { return m.PutFile(ctx, k, "a.go", manifesttest.Entry(1)) }},
			{"Get", func(k string) error { _, err := m.Get(ctx, k); return err }},
			{"DeleteFile", func(k string) error { return m.DeleteFile(ctx, k, "a.go") }},
			{"List", func(string) error { _, err := m.List(ctx); return err }},
			{"Remove", func(k string) error { return m.Remove(ctx, k) }},
		}
		// Once unmeasured, so that the node has loaded each script.
		k := "/work/repo\x00token:alice"
		for _, c := range calls {
			if err := c.call(k); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		rt := &roundTrips{}
		s.rdb.AddHook(rt)
		for _, c := range calls {
			before := rt.n.Load()
			if err := c.call(k); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if n := rt.n.Load() - before; n != want[c.name] {
				t.Errorf("%s: %s took %d round trips, want %d", name, c.name, n, want[c.name])
			}
		}
	}
}

// failZRem fails every ZREM, as Redis failing between a Remove's delete of
// the record and its removal of the index entry.
type failZRem struct{ on atomic.Bool }

func (*failZRem) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failZRem) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.on.Load() && cmd.Name() == "zrem" {
			err := errors.New("connection reset by peer")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (*failZRem) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestManifestsListCleansOrphans: an index entry a failed Remove left
// without its record is taken out by the next List, once its use is past
// the grace; an entry without a record whose use is recent (a SetStore
// between its two steps) stays.
func TestManifestsListCleansOrphans(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{Prefix: "p:"})
	c := plain(t, srv)
	ctx, m := t.Context(), s.Manifests()
	gone, kept := "/work/gone\x00token:a", "/work/kept\x00token:a"
	if err := m.SetStore(ctx, gone, "fileSearchStores/s1", time.Now().Add(-orphanGrace-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := m.SetStore(ctx, kept, "fileSearchStores/s2", time.Now()); err != nil {
		t.Fatal(err)
	}
	hook := &failZRem{}
	s.rdb.AddHook(hook)
	hook.on.Store(true)
	if err := m.Remove(ctx, gone); !errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("Remove with Redis failing before the index: %v", err)
	}
	hook.on.Store(false)
	// A SetStore that added its index entry and has not written its
	// record yet.
	pending := manifestHash("/work/pending\x00token:a")
	if err := c.ZAdd(ctx, "p:manifests", redis.Z{Score: float64(time.Now().UnixMilli()), Member: pending}).Err(); err != nil {
		t.Fatal(err)
	}
	if n := c.ZCard(ctx, "p:manifests").Val(); n != 3 {
		t.Fatalf("the index has %d entries before List, want 3", n)
	}
	recs, err := m.List(ctx)
	if err != nil || len(recs) != 1 || recs[0].Key != kept {
		t.Fatalf("List: %+v, %v; want %q alone", recs, err, kept)
	}
	idx := c.ZRange(ctx, "p:manifests", 0, -1).Val()
	want := []string{manifestHash(kept), pending}
	if strings.Join(sorted(idx), " ") != strings.Join(sorted(want), " ") {
		t.Fatalf("the index after List: %q, want %q (the removed manifest's entry gone)", idx, want)
	}
}

// TestManifestsPruneKeepsAReAdded: the orphans' removal takes an entry
// out only while its score is the one List read, so that a SetStore that
// came meanwhile keeps its entry.
func TestManifestsPruneKeepsAReAdded(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{Prefix: "p:"})
	c := plain(t, srv)
	ctx := t.Context()
	c.ZAdd(ctx, "p:manifests", redis.Z{Score: 1000, Member: "a"}, redis.Z{Score: 2000, Member: "b"})
	n, err := pruneManifestIndexScript.Run(ctx, s.rdb, []string{"p:manifests"}, "a", "1000", "b", "1500").Int64()
	if err != nil || n != 1 {
		t.Fatalf("prune: %d, %v; want 1", n, err)
	}
	if idx := c.ZRange(ctx, "p:manifests", 0, -1).Val(); strings.Join(idx, " ") != "b" {
		t.Fatalf("the index after the prune: %q, want b alone", idx)
	}
}
