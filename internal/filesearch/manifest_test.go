package filesearch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifesttest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/embedded"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/redisstore"
)

// Both Manifests pass the conformance suite, each as one process's (both
// clients one value: FileManifests keeps one process's manifests).
func TestManifests(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		manifesttest.Run(t, func(*testing.T) (Manifests, Manifests) {
			m := &MemoryManifests{}
			return m, m
		})
	})
	t.Run("file", func(t *testing.T) {
		manifesttest.Run(t, func(t *testing.T) (Manifests, Manifests) {
			dir := filepath.Join(t.TempDir(), "fs")
			a, err := NewFileManifests(dir)
			must(t, err)
			return a, a
		})
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// An index cut short, then a restart (new manifests and indexer on the
// same directory): only the missing files are uploaded. A line cut short
// by a crash is ignored.
func TestIndexResumesAfterARestart(t *testing.T) {
	f := newFixture(t)
	root, dir := t.TempDir(), filepath.Join(t.TempDir(), "manifests")
	tree(t, root, 30)
	m1, err := NewFileManifests(dir)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cut := &cutter{Remote: f.api, after: 12, cancel: cancel}
	if _, err := New(cut, m1, Options{Concurrency: 1, Now: f.clock}).Index(ctx, root, "alice"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut index: %v", err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("manifest files %v", logs)
	}
	fh, err := os.OpenFile(logs[0], os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	fh.WriteString(`{"put":"pkg0/file0.go","ha`)
	fh.Close()

	m2, err := NewFileManifests(dir)
	must(t, err)
	up0, _ := f.fake.StoreCounts()
	rep, err := New(f.api, m2, Options{Now: f.clock}).Index(context.Background(), root, "alice")
	must(t, err)
	up1, _ := f.fake.StoreCounts()
	if rep.Uploaded != 18 || rep.Unchanged != 12 || up1-up0 != 18 || len(f.docs(rep.Store)) != 30 {
		t.Fatalf("index after the restart: %+v, fake uploads +%d; want the 18 missing", rep, up1-up0)
	}
}

// An index cut short on one server, resumed by the next on the same
// session store (the embedded store's file reopened after the first
// closed, as after a restart; a second replica on the same Redis): only
// what is missing is uploaded.
func TestIndexResumesOnTheSessionStore(t *testing.T) {
	// Each returns the first server's manifests and a function that
	// returns the next's.
	for name, stores := range map[string]func(t *testing.T) (Manifests, func() Manifests){
		"embedded": func(t *testing.T) (Manifests, func() Manifests) {
			db := filepath.Join(t.TempDir(), "sessions.db")
			a, err := embedded.Open(db, session.Options{})
			must(t, err)
			t.Cleanup(func() { a.Close() })
			return a.Manifests(), func() Manifests {
				must(t, a.Close())
				b, err := embedded.Open(db, session.Options{})
				must(t, err)
				t.Cleanup(func() { b.Close() })
				return b.Manifests()
			}
		},
		"redis": func(t *testing.T) (Manifests, func() Manifests) {
			srv := redistest.Start(t)
			open := func() Manifests {
				s, err := redisstore.Open(t.Context(), srv.URL(0), session.Options{})
				must(t, err)
				t.Cleanup(func() { s.Close() })
				return s.Manifests()
			}
			return open(), open
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			root := t.TempDir()
			tree(t, root, 30)
			m1, next := stores(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cut := &cutter{Remote: f.api, after: 12, cancel: cancel}
			if _, err := New(cut, m1, Options{Concurrency: 1, Now: f.clock}).Index(ctx, root, "alice"); !errors.Is(err, context.Canceled) {
				t.Fatalf("cut index: %v", err)
			}
			m2 := next()
			up0, _ := f.fake.StoreCounts()
			rep, err := New(f.api, m2, Options{Now: f.clock}).Index(context.Background(), root, "alice")
			must(t, err)
			up1, _ := f.fake.StoreCounts()
			// The 12th upload may finish as the index is cut, before its
			// entry is written: a stray the resumed index deletes.
			if rep.Unchanged < 11 || rep.Uploaded+rep.Unchanged != 30 || up1-up0 != rep.Uploaded || len(f.docs(rep.Store)) != 30 {
				t.Fatalf("the resumed index: %+v, fake uploads +%d; want only the 18 or 19 missing uploaded", rep, up1-up0)
			}
		})
	}
}
