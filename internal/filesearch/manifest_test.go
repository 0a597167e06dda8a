package filesearch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifesttest"
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
