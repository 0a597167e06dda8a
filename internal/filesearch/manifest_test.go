package filesearch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Both Manifests keep the same records.
func TestManifests(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) Manifests{
		"memory": func(*testing.T) Manifests { return &MemoryManifests{} },
		"file": func(t *testing.T) Manifests {
			m, err := NewFileManifests(filepath.Join(t.TempDir(), "fs"))
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := mk(t)
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			if r, err := m.Get(ctx, "k"); err != nil || r.Store != "" || len(r.Files) != 0 {
				t.Fatalf("Get of nothing: %+v, %v", r, err)
			}
			must(t, m.PutFile(ctx, "k", "lost.go", Entry{Hash: "h", Document: "d"})) // no store yet: dropped
			must(t, m.SetStore(ctx, "k", "s1", t0))
			must(t, m.PutFile(ctx, "k", "a.go", Entry{Hash: "ha", Document: "s1/documents/a"}))
			must(t, m.PutFile(ctx, "k", "b.go", Entry{Hash: "hb", Document: "s1/documents/b"}))
			must(t, m.PutFile(ctx, "k", "a.go", Entry{Hash: "ha2", Document: "s1/documents/a2"}))
			must(t, m.DeleteFile(ctx, "k", "b.go"))
			must(t, m.SetStore(ctx, "k", "s1", t0.Add(time.Hour)))
			must(t, m.SetStore(ctx, "other", "s2", t0))
			r, err := m.Get(ctx, "k")
			if err != nil || r.Store != "s1" || !r.Used.Equal(t0.Add(time.Hour)) || len(r.Files) != 1 || r.Files["a.go"].Hash != "ha2" {
				t.Fatalf("Get: %+v, %v", r, err)
			}
			list, err := m.List(ctx)
			if err != nil || len(list) != 2 {
				t.Fatalf("List: %+v, %v", list, err)
			}
			must(t, m.SetStore(ctx, "k", "s3", t0))
			if r, _ := m.Get(ctx, "k"); r.Store != "s3" || len(r.Files) != 0 {
				t.Fatalf("a new store kept the old files: %+v", r)
			}
			must(t, m.Remove(ctx, "k"))
			if r, _ := m.Get(ctx, "k"); r.Store != "" {
				t.Fatalf("removed record: %+v", r)
			}
		})
	}
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
