package filesearch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

type fixture struct {
	t    testing.TB
	fake *fakeapi.Server
	api  *API
	man  *MemoryManifests
	now  atomic.Pointer[time.Time]
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{t: t, fake: fakeapi.New(), man: &MemoryManifests{}}
	t.Cleanup(f.fake.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "test-key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: f.fake.URL() + "/"},
		HTTPClient:  &http.Client{Transport: tr},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.api = NewAPI(c)
	f.api.Poll, f.api.PollMax = time.Millisecond, 2*time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.now.Store(&t0)
	return f
}

func (f *fixture) clock() time.Time { return *f.now.Load() }

func (f *fixture) advance(d time.Duration) {
	t := f.clock().Add(d)
	f.now.Store(&t)
}

func (f *fixture) indexer(remote Remote, opts Options) *Indexer {
	if remote == nil {
		remote = f.api
	}
	opts.Now = f.clock
	return New(remote, f.man, opts)
}

func (f *fixture) index(ix *Indexer, root, scope string) *Report {
	f.t.Helper()
	rep, err := ix.Index(context.Background(), root, scope)
	if err != nil {
		f.t.Fatalf("Index: %v", err)
	}
	return rep
}

// docs returns the store's documents by display name, with their text.
func (f *fixture) docs(store string) map[string]string {
	out := map[string]string{}
	for _, d := range f.fake.Documents(store) {
		if _, dup := out[d.DisplayName]; dup {
			f.t.Errorf("two documents for %s", d.DisplayName)
		}
		out[d.DisplayName] = string(d.Data)
	}
	return out
}

func write(t testing.TB, root, rel, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree writes n source files under root and returns their paths.
func tree(t testing.TB, root string, n int) []string {
	t.Helper()
	var paths []string
	for i := range n {
		rel := fmt.Sprintf("pkg%d/file%d.go", i%7, i)
		write(t, root, rel, fmt.Sprintf("package pkg\n\n// File %d.\nfunc F%d() int { return %d }\n", i, i, i))
		paths = append(paths, rel)
	}
	return paths
}

func TestIndexUploadsOnlyNewAndChangedFiles(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	paths := tree(t, root, 30)
	ix := f.indexer(nil, Options{})

	rep := f.index(ix, root, "alice")
	if rep.Uploaded != 30 || rep.Files != 30 || rep.Unchanged != 0 || rep.Store == "" {
		t.Fatalf("first index: %+v, want 30 files uploaded into a store", rep)
	}
	if got := f.docs(rep.Store); len(got) != 30 || !strings.Contains(got["pkg3/file10.go"], "func F10()") {
		t.Fatalf("store holds %d documents (pkg3/file10.go: %q), want the 30 files", len(got), got["pkg3/file10.go"])
	}

	up0, del0 := f.fake.StoreCounts()
	rep = f.index(ix, root, "alice")
	if up, del := f.fake.StoreCounts(); rep.Uploaded != 0 || rep.Unchanged != 30 || up != up0 || del != del0 {
		t.Fatalf("unchanged re-index: %+v, fake uploads %d→%d deletes %d→%d; want nothing sent", rep, up0, up, del0, del)
	}

	for _, rel := range paths[:10] {
		write(t, root, rel, "package pkg\n\n// changed\n")
	}
	rep = f.index(ix, root, "alice")
	up1, del1 := f.fake.StoreCounts()
	if rep.Uploaded != 10 || rep.Unchanged != 20 || up1-up0 != 10 || del1-del0 != 10 {
		t.Fatalf("after changing 10 files: %+v, fake uploads +%d deletes +%d; want exactly 10 of each", rep, up1-up0, del1-del0)
	}
	docs := f.docs(rep.Store)
	if len(docs) != 30 || docs[paths[0]] != "package pkg\n\n// changed\n" {
		t.Fatalf("store after the change: %d documents, %s = %q", len(docs), paths[0], docs[paths[0]])
	}

	for _, rel := range paths[28:] {
		os.Remove(filepath.Join(root, rel))
	}
	rep = f.index(ix, root, "alice")
	if rep.Deleted != 2 || rep.Files != 28 || len(f.docs(rep.Store)) != 28 {
		t.Fatalf("after removing 2 files: %+v, %d documents; want their 2 documents deleted", rep, len(f.docs(rep.Store)))
	}
}

func TestIndexKeepsSecretAndIgnoredFilesOut(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	write(t, root, ".gitignore", "generated/\n*.log\n")
	write(t, root, "generated/out.go", "package generated\n")
	write(t, root, "debug.log", "log line\n")
	write(t, root, ".env", "API_TOKEN=abc\n")
	write(t, root, "deploy/id_ed25519", "not really a key\n")
	write(t, root, "node_modules/x/index.js", "x\n")
	write(t, root, "bin.dat", "a\x00b")
	write(t, root, "config.go", "package config\n\nvar password = \"hunter2hunter2\"\n\nfunc Load() {}\n")
	ix := f.indexer(nil, Options{})
	rep := f.index(ix, root, "alice")
	docs := f.docs(rep.Store)
	for name := range docs {
		if name != ".gitignore" && name != "config.go" {
			t.Errorf("%s was uploaded; only .gitignore and config.go may be", name)
		}
	}
	cfg, ok := docs["config.go"]
	if !ok || strings.Contains(cfg, "hunter2") || !strings.Contains(cfg, "func Load()") {
		t.Fatalf("config.go as uploaded: %q; want its password withheld and the rest kept", cfg)
	}
	for _, r := range []string{"ignored", "secret-file", "binary", "excluded"} {
		if rep.SkippedBy[filectx.Reason(r)] == 0 {
			t.Errorf("report %+v counts no file skipped as %s", rep.SkippedBy, r)
		}
	}
}

func TestIndexResumesWhereItWasCut(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 40)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cut := &cutter{Remote: f.api, after: 15, cancel: cancel}
	ix := f.indexer(cut, Options{Concurrency: 1})
	if _, err := ix.Index(ctx, root, "alice"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut index: err %v, want context.Canceled", err)
	}
	up0, _ := f.fake.StoreCounts()
	rec, _ := f.man.Get(context.Background(), Key(root, "alice"))
	if len(rec.Files) != 15 || up0 != 15 {
		t.Fatalf("after the cut the manifest holds %d files and the fake %d uploads; want the 15 finished", len(rec.Files), up0)
	}
	rep := f.index(f.indexer(nil, Options{}), root, "alice")
	up1, _ := f.fake.StoreCounts()
	if rep.Uploaded != 25 || rep.Unchanged != 15 || up1-up0 != 25 || rep.Store != rec.Store {
		t.Fatalf("resumed index: %+v, fake uploads +%d; want the 25 missing into the same store %s", rep, up1-up0, rec.Store)
	}
	if n := len(f.docs(rep.Store)); n != 40 {
		t.Fatalf("store holds %d documents, want 40", n)
	}
}

// cutter cancels the index once after uploads have finished.
type cutter struct {
	Remote
	after  int32
	n      atomic.Int32
	cancel func()
}

func (c *cutter) Upload(ctx context.Context, store string, doc Doc, data []byte) (string, error) {
	name, err := c.Remote.Upload(ctx, store, doc, data)
	if c.n.Add(1) == c.after {
		c.cancel()
	}
	return name, err
}

func TestStoreDeletedBehindOurBackIsMadeAgain(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 12)
	ix := f.indexer(nil, Options{})
	first := f.index(ix, root, "alice")
	f.fake.DropStore(first.Store)
	rep := f.index(ix, root, "alice")
	if !rep.Recreated || rep.Store == first.Store || rep.Uploaded != 12 || len(f.docs(rep.Store)) != 12 {
		t.Fatalf("re-index after the store went: %+v; want a new store with the 12 files", rep)
	}
	rec, _ := f.man.Get(context.Background(), Key(root, "alice"))
	if rec.Store != rep.Store || len(rec.Files) != 12 {
		t.Fatalf("manifest %s with %d files, want the new store's 12", rec.Store, len(rec.Files))
	}
}

func TestStoreGoneMidIndexIsMadeAgain(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 12)
	var once sync.Once
	gone := &hook{Remote: f.api, before: func(store string) { once.Do(func() { f.fake.DropStore(store) }) }}
	rep := f.index(f.indexer(gone, Options{Concurrency: 1}), root, "alice")
	if rep.Uploaded != 12 || len(f.docs(rep.Store)) != 12 || len(f.fake.Stores()) != 1 {
		t.Fatalf("index whose store went half-way: %+v, %d stores; want one new store with the 12 files", rep, len(f.fake.Stores()))
	}
}

// hook calls before ahead of every upload.
type hook struct {
	Remote
	before func(store string)
}

func (h *hook) Upload(ctx context.Context, store string, doc Doc, data []byte) (string, error) {
	h.before(store)
	return h.Remote.Upload(ctx, store, doc, data)
}

func TestScopesGetTheirOwnStores(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 5)
	ix := f.indexer(nil, Options{})
	a, b := f.index(ix, root, "alice"), f.index(ix, root, "bob")
	if a.Store == b.Store || len(f.fake.Stores()) != 2 || b.Uploaded != 5 {
		t.Fatalf("stores %s and %s (%d in the fake), bob uploaded %d; want two stores, each with the 5 files",
			a.Store, b.Store, len(f.fake.Stores()), b.Uploaded)
	}
	if _, err := ix.Index(context.Background(), root, ""); err == nil || len(f.fake.Stores()) != 2 {
		t.Fatalf("index without a scope: err %v, %d stores; want an error and no store", err, len(f.fake.Stores()))
	}
}

func TestSweepDeletesUnusedStores(t *testing.T) {
	f := newFixture(t)
	old, used := t.TempDir(), t.TempDir()
	tree(t, old, 3)
	tree(t, used, 3)
	ix := f.indexer(nil, Options{TTL: time.Hour})
	f.index(ix, old, "alice")
	f.advance(40 * time.Minute)
	keep := f.index(ix, used, "alice")
	f.advance(30 * time.Minute)
	if n, err := ix.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("Sweep: %d, %v; want the one store unused for an hour", n, err)
	}
	if st := f.fake.Stores(); len(st) != 1 || st[0].Name != keep.Store {
		t.Fatalf("stores after the sweep: %+v, want only %s", st, keep.Store)
	}
	if s, _ := ix.Store(context.Background(), old, "alice"); s != "" {
		t.Fatalf("swept root still has store %s", s)
	}
	if err := ix.Drop(context.Background(), used, "alice"); err != nil || len(f.fake.Stores()) != 0 {
		t.Fatalf("Drop: %v, %d stores left", err, len(f.fake.Stores()))
	}
	if rep := f.index(ix, old, "alice"); rep.Uploaded != 3 {
		t.Fatalf("index after the sweep: %+v, want the files again in a new store", rep)
	}
}

func TestIndexWaitsForPendingOperations(t *testing.T) {
	f := newFixture(t)
	f.fake.SetPendingPolls(3)
	root := t.TempDir()
	tree(t, root, 4)
	rep := f.index(f.indexer(nil, Options{}), root, "alice")
	rec, _ := f.man.Get(context.Background(), Key(root, "alice"))
	polls := 0
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodOperationGet {
			polls++
		}
	}
	if rep.Uploaded != 4 || len(rec.Files) != 4 || polls != 16 {
		t.Fatalf("%+v, %d operations.get; want 4 uploads each polled 4 times", rep, polls)
	}
	for _, e := range rec.Files {
		if !strings.HasPrefix(e.Document, rep.Store+"/documents/") {
			t.Fatalf("manifest document %q is not in the store %s", e.Document, rep.Store)
		}
	}
}

func TestIndexBounds(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 10)
	write(t, root, "big.txt", strings.Repeat("x", 5000))
	rep := f.index(f.indexer(nil, Options{MaxFiles: 6, MaxFileBytes: 4096}), root, "alice")
	if rep.Files != 6 || rep.SkippedBy[SkipFileLimit] != 4 || rep.SkippedBy["too-large"] != 1 {
		t.Fatalf("bounded index: %+v; want 6 files, 4 over the file limit, big.txt too large", rep)
	}
	if _, err := f.indexer(nil, Options{}).Index(context.Background(), filepath.Join(root, "nope"), "alice"); err == nil {
		t.Fatal("a root that does not exist was indexed")
	}
}

// An upload the API finished after its index was cut, before the
// manifest was written, leaves a document the manifest does not name:
// the next index deletes it, so that no file is in the store twice.
func TestStrayDocumentsOfACutIndexAreDeleted(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lost := &lateCut{Remote: f.api, at: 4, cancel: cancel}
	if _, err := f.indexer(lost, Options{Concurrency: 1}).Index(ctx, root, "alice"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut index: %v", err)
	}
	rep := f.index(f.indexer(nil, Options{}), root, "alice")
	if rep.Strays != 1 || rep.Uploaded != 7 || len(f.docs(rep.Store)) != 10 {
		t.Fatalf("index after the cut: %+v, %d documents; want the stray deleted and the 7 missing uploaded", rep, len(f.docs(rep.Store)))
	}
	if again := f.index(f.indexer(nil, Options{}), root, "alice"); again.Strays != 0 || again.Uploaded != 0 {
		t.Fatalf("index after that: %+v, want nothing to do", again)
	}
}

// lateCut lets the at-th upload finish on the API's side, then cuts the
// index as if it had not.
type lateCut struct {
	Remote
	at     int32
	n      atomic.Int32
	cancel func()
}

func (c *lateCut) Upload(ctx context.Context, store string, doc Doc, data []byte) (string, error) {
	name, err := c.Remote.Upload(ctx, store, doc, data)
	if c.n.Add(1) == c.at {
		c.cancel()
		return "", context.Canceled
	}
	return name, err
}

func TestIndexReportsProgress(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	tree(t, root, 12)
	ix := f.indexer(nil, Options{Concurrency: 3})
	var mu sync.Mutex
	var seen [][2]int
	ctx := WithProgress(context.Background(), func(done, total int) {
		mu.Lock()
		seen = append(seen, [2]int{done, total})
		mu.Unlock()
	})
	if _, err := ix.Index(ctx, root, "alice"); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 13 || seen[0] != [2]int{0, 12} || seen[12] != [2]int{12, 12} {
		t.Fatalf("progress %v, want 0 of 12, then each file to 12 of 12", seen)
	}
	for i, p := range seen {
		if p[0] != i {
			t.Fatalf("progress %v: not one file at a time", seen)
		}
	}
}
