package embedded

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifesttest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestManifestsConformance: two stores on one file stand for two
// processes sharing it; one of them is reached as the server reaches it
// (manifest.Of, through session.Observed).
func TestManifestsConformance(t *testing.T) {
	manifesttest.Run(t, func(t *testing.T) (manifest.Manifests, manifest.Manifests) {
		db := filepath.Join(t.TempDir(), "sessions.db")
		a := open(t, db, session.Options{})
		b := open(t, db, session.Options{})
		return manifest.Of(session.Observed(a, func(string, time.Duration, error) {})), b.Manifests()
	})
}

// TestManifestsSurviveRestart: a manifest a store wrote half-way (an
// index cut short) is whole in a store opened later on the file, and the
// expiry sweep of sessions leaves it alone.
func TestManifestsSurviveRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	a := open(t, db, session.Options{TTL: time.Millisecond})
	k, used := "/work/repo\x00token:alice", time.UnixMilli(time.Now().UnixMilli())
	m := a.Manifests()
	if err := m.SetStore(t.Context(), k, "fileSearchStores/s1", used); err != nil {
		t.Fatal(err)
	}
	manifesttest.Fill(t, m, k, 12)
	a.Close()
	b := open(t, db, session.Options{TTL: time.Millisecond})
	if err := b.expire(t.Context()); err != nil {
		t.Fatal(err)
	}
	r, err := b.Manifests().Get(t.Context(), k)
	if err != nil || r.Store != "fileSearchStores/s1" || !r.Used.Equal(used) || len(r.Files) != 12 || r.Files[manifesttest.Path(5)] != manifesttest.Entry(5) {
		t.Fatalf("after a restart: %+v, %v", r, err)
	}
}

// TestManifestsOnAnOlderDatabase: a database an earlier version made,
// without the manifests' tables, opens with them, at the same schema
// version, so that the earlier version's processes on the file go on.
func TestManifestsOnAnOlderDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	s := open(t, db, session.Options{})
	id := session.NewUUID()
	if _, err := s.Touch(t.Context(), id, session.Turn{Cwd: "/w"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`DROP TABLE manifest_files; DROP TABLE manifests`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, db, session.Options{})
	var v int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version %d %v, want %d still", v, err, schemaVersion)
	}
	if _, ok, err := s.Get(t.Context(), id); err != nil || !ok {
		t.Fatalf("the older database's session: %v %v", ok, err)
	}
	m := s.Manifests()
	if err := m.SetStore(t.Context(), "k", "fileSearchStores/s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := m.PutFile(t.Context(), "k", "a.go", manifesttest.Entry(1)); err != nil {
		t.Fatal(err)
	}
	if r, err := m.Get(t.Context(), "k"); err != nil || len(r.Files) != 1 {
		t.Fatalf("a manifest on the older database: %+v, %v", r, err)
	}
}

// TestManifestPutCompilesNoSQL: a file's PutFile and a Get run on the
// statements prepared at Open, as a turn's calls do.
func TestManifestPutCompilesNoSQL(t *testing.T) {
	useCountingDriver(t)
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), session.Options{})
	m, k := s.Manifests(), "/w\x00token:a"
	if err := m.SetStore(t.Context(), k, "fileSearchStores/s1", time.Now()); err != nil {
		t.Fatal(err)
	}
	manifesttest.Fill(t, m, k, 64) // every connection has run them
	before := compiled.Load()
	for i := range 20 {
		if err := m.PutFile(t.Context(), k, fmt.Sprintf("new%d.go", i), manifesttest.Entry(i)); err != nil {
			t.Fatal(err)
		}
		if err := m.DeleteFile(t.Context(), k, manifesttest.Path(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Get(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if n := compiled.Load() - before; n != 0 {
		t.Errorf("20 puts and deletes and a Get compiled %d SQL texts, want 0", n)
	}
}

// BenchmarkManifests20000 measures a manifest of 20,000 files, as a large
// root's index keeps it: filling it (eight callers at once, as an index's
// uploads finish), a file's PutFile into it (a changed file: its entry
// replaced), and a Get of all of it; and the bytes it takes in the file.
func BenchmarkManifests20000(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "sessions.db"), session.Options{})
	m, k := s.Manifests(), "/work/big\x00token:alice"
	if err := m.SetStore(b.Context(), k, "fileSearchStores/big", time.Now()); err != nil {
		b.Fatal(err)
	}
	size := func() float64 {
		var pages, pageSize int64
		if _, err := s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			b.Fatal(err)
		}
		if err := s.db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
			b.Fatal(err)
		}
		if err := s.db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
			b.Fatal(err)
		}
		return float64(pages * pageSize)
	}
	before := size()
	start := time.Now()
	manifesttest.Fill(b, m, k, 20_000)
	fill := time.Since(start)
	bytes := size() - before
	b.Run("put", func(b *testing.B) {
		i := 0
		for b.Loop() {
			e := manifesttest.Entry(i + 1)
			if err := m.PutFile(b.Context(), k, manifesttest.Path(i%20_000), e); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(fill.Seconds(), "fill20000-s")
		b.ReportMetric(bytes/20_000, "file-B/file")
	})
	b.Run("get", func(b *testing.B) {
		for b.Loop() {
			r, err := m.Get(b.Context(), k)
			if err != nil || len(r.Files) != 20_000 {
				b.Fatalf("Get: %d files, %v", len(r.Files), err)
			}
		}
	})
}
