// Package manifesttest is the conformance suite of manifest.Manifests:
// every implementation (the session stores', filesearch's file and memory
// ones) runs it from its own tests, with two clients of one store standing
// for two replicas (two processes sharing the embedded store's file, two
// servers sharing a Redis), so that what one writes the other must read.
package manifesttest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
)

// guard bounds each test's calls: a failure guard only.
const guard = 2 * time.Minute

// Open returns two clients of one new, empty store: a and b may be the
// same value for a store that lives in one process. The suite closes
// nothing: open registers its own cleanup.
type Open func(t *testing.T) (a, b manifest.Manifests)

// Run runs the suite on the stores open returns.
func Run(t *testing.T, open Open) {
	t.Run("Unknown", func(t *testing.T) { unknown(t, open) })
	t.Run("Replicas", func(t *testing.T) { replicas(t, open) })
	t.Run("NewStore", func(t *testing.T) { newStore(t, open) })
	t.Run("List", func(t *testing.T) { list(t, open) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, open) })
	t.Run("BadInput", func(t *testing.T) { badInput(t, open) })
	t.Run("MaxFiles", func(t *testing.T) { maxFiles(t, open) })
	t.Run("ReplaceStore", func(t *testing.T) { replaceStore(t, open) })
}

// replaceStore: two clients racing ReplaceStore from none, each with its
// own store: exactly one wins, the other is refused with ErrStoreTaken
// and changes nothing; a replace of the winner's store by the name it
// has succeeds, one by a stale name is refused.
func replaceStore(t *testing.T, open Open) {
	a, b := open(t)
	ctx, k := ctxOf(t), key("/work/repo", "token:alice")
	for round := range 20 {
		k := fmt.Sprintf("%s-%d", k, round)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, m := range []manifest.Manifests{a, b} {
			wg.Go(func() { errs[i] = m.ReplaceStore(ctx, k, "", fmt.Sprintf("fileSearchStores/c%d", i), t0) })
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won < 0:
				won = i
			case err == nil:
				t.Fatalf("round %d: both ReplaceStore from none succeeded", round)
			case !errors.Is(err, manifest.ErrStoreTaken):
				t.Fatalf("round %d: ReplaceStore: %v, want ErrStoreTaken", round, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: neither ReplaceStore from none succeeded: %v", round, errs)
		}
		if r := get(t, b, k); r.Store != fmt.Sprintf("fileSearchStores/c%d", won) {
			t.Fatalf("round %d: the record names %q, want the winner's c%d", round, r.Store, won)
		}
	}
	must(t, a.ReplaceStore(ctx, k, "", "fileSearchStores/s1", t0))
	must(t, a.PutFile(ctx, k, "a.go", entry("a")))
	if err := b.ReplaceStore(ctx, k, "fileSearchStores/gone", "fileSearchStores/s2", t0); !errors.Is(err, manifest.ErrStoreTaken) {
		t.Fatalf("ReplaceStore from a stale store: %v, want ErrStoreTaken", err)
	}
	if r := get(t, a, k); r.Store != "fileSearchStores/s1" || len(r.Files) != 1 {
		t.Fatalf("a refused ReplaceStore changed the record: %+v", r)
	}
	must(t, b.ReplaceStore(ctx, k, "fileSearchStores/s1", "fileSearchStores/s2", t0.Add(time.Second)))
	if r := get(t, a, k); r.Store != "fileSearchStores/s2" || len(r.Files) != 0 || !r.Used.Equal(t0.Add(time.Second)) {
		t.Fatalf("after a ReplaceStore: %+v; want s2 without files", r)
	}
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}

// key is a key as filesearch makes them: a root and a scope.
func key(root, scope string) string { return root + "\x00" + scope }

// t0 is a use time exact to the millisecond, as the stores keep it.
var t0 = time.Date(2026, 11, 28, 12, 30, 15, 123_000_000, time.UTC)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, m manifest.Manifests, k string) manifest.Record {
	t.Helper()
	r, err := m.Get(ctxOf(t), k)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if r.Key != k || r.Files == nil {
		t.Fatalf("Get(%q) = key %q, files %v: want the key asked for and a map", k, r.Key, r.Files)
	}
	return r
}

func entry(name string) manifest.Entry {
	return manifest.Entry{Hash: fmt.Sprintf("%064x", len(name)), Document: "fileSearchStores/s1/documents/" + name}
}

// unknown: a key never set reads as a record without a store or files;
// PutFile, DeleteFile and Remove on it do nothing and fail nothing.
func unknown(t *testing.T, open Open) {
	a, b := open(t)
	ctx, k := ctxOf(t), key("/work/repo", "token:alice")
	if r := get(t, a, k); r.Store != "" || len(r.Files) != 0 || !r.Used.IsZero() {
		t.Fatalf("Get of an unknown key: %+v", r)
	}
	must(t, a.PutFile(ctx, k, "lost.go", entry("lost"))) // no store yet: dropped
	must(t, a.DeleteFile(ctx, k, "lost.go"))
	must(t, b.Remove(ctx, k))
	if r := get(t, b, k); r.Store != "" || len(r.Files) != 0 {
		t.Fatalf("a PutFile before SetStore was kept: %+v", r)
	}
	if l, err := b.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("List of an empty store: %+v, %v", l, err)
	}
}

// replicas: what A writes B reads, file by file, with the use time to
// the millisecond; B's changes A reads; Remove on B forgets it on A.
func replicas(t *testing.T, open Open) {
	a, b := open(t)
	ctx, k := ctxOf(t), key("/work/repo", "token:alice")
	must(t, a.SetStore(ctx, k, "fileSearchStores/s1", t0))
	must(t, a.PutFile(ctx, k, "a.go", entry("a")))
	must(t, a.PutFile(ctx, k, "dir/b.go", entry("b")))
	must(t, a.PutFile(ctx, k, "a.go", entry("a2"))) // replaced
	must(t, a.PutFile(ctx, k, "naïve file €.md", entry("c")))
	r := get(t, b, k)
	want := map[string]manifest.Entry{"a.go": entry("a2"), "dir/b.go": entry("b"), "naïve file €.md": entry("c")}
	if r.Store != "fileSearchStores/s1" || !r.Used.Equal(t0) || !equal(r.Files, want) {
		t.Fatalf("B reads %+v; want A's store, use time %v and files %v", r, t0, want)
	}
	must(t, b.DeleteFile(ctx, k, "dir/b.go"))
	must(t, b.DeleteFile(ctx, k, "never.go"))
	later := t0.Add(90 * time.Minute)
	must(t, b.SetStore(ctx, k, "fileSearchStores/s1", later)) // the same store: files kept
	r = get(t, a, k)
	delete(want, "dir/b.go")
	if r.Store != "fileSearchStores/s1" || !r.Used.Equal(later) || !equal(r.Files, want) {
		t.Fatalf("A reads %+v; want B's use time %v and files %v", r, later, want)
	}
	// A copy: changing it changes nothing stored.
	r.Files["a.go"] = entry("changed")
	if r := get(t, a, k); r.Files["a.go"] != entry("a2") {
		t.Fatalf("a change to Get's map was stored: %+v", r.Files["a.go"])
	}
	must(t, b.Remove(ctx, k))
	if r := get(t, a, k); r.Store != "" || len(r.Files) != 0 || !r.Used.IsZero() {
		t.Fatalf("A reads %+v after B removed it", r)
	}
	// A key of its own again: the old files do not come back.
	must(t, a.SetStore(ctx, k, "fileSearchStores/s1", later))
	if r := get(t, b, k); len(r.Files) != 0 {
		t.Fatalf("files of a removed manifest came back: %v", r.Files)
	}
}

// newStore: setting another store drops the files, on both clients;
// other keys (another scope of the same root) keep theirs.
func newStore(t *testing.T, open Open) {
	a, b := open(t)
	ctx := ctxOf(t)
	alice, bob := key("/work/repo", "token:alice"), key("/work/repo", "token:bob")
	must(t, a.SetStore(ctx, alice, "fileSearchStores/s1", t0))
	must(t, a.SetStore(ctx, bob, "fileSearchStores/s2", t0))
	must(t, a.PutFile(ctx, alice, "a.go", entry("a")))
	must(t, a.PutFile(ctx, bob, "a.go", entry("bob")))
	must(t, b.SetStore(ctx, alice, "fileSearchStores/s3", t0.Add(time.Second)))
	if r := get(t, a, alice); r.Store != "fileSearchStores/s3" || len(r.Files) != 0 {
		t.Fatalf("a new store kept the old one's files: %+v", r)
	}
	must(t, a.PutFile(ctx, alice, "b.go", entry("b")))
	if r := get(t, b, alice); !equal(r.Files, map[string]manifest.Entry{"b.go": entry("b")}) {
		t.Fatalf("the new store's files: %v", r.Files)
	}
	if r := get(t, b, bob); r.Store != "fileSearchStores/s2" || !equal(r.Files, map[string]manifest.Entry{"a.go": entry("bob")}) {
		t.Fatalf("another scope's manifest changed: %+v", r)
	}
}

// list: every record, with its store and use time and without its files;
// a removed one is gone.
func list(t *testing.T, open Open) {
	a, b := open(t)
	ctx := ctxOf(t)
	keys := []string{key("/work/a", "token:alice"), key("/work/b", "token:alice"), key("/work/a", "addr:10.0.0.1")}
	for i, k := range keys {
		must(t, a.SetStore(ctx, k, fmt.Sprintf("fileSearchStores/s%d", i), t0.Add(time.Duration(i)*time.Hour)))
		must(t, a.PutFile(ctx, k, "x.go", entry("x")))
	}
	must(t, a.Remove(ctx, keys[1]))
	got, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(x, y manifest.Record) int { return cmp.Compare(x.Key, y.Key) })
	var lines []string
	for _, r := range got {
		lines = append(lines, fmt.Sprintf("%q %s %s files=%d", r.Key, r.Store, r.Used.UTC().Format(time.RFC3339Nano), len(r.Files)))
	}
	want := []string{
		fmt.Sprintf("%q fileSearchStores/s2 %s files=0", keys[2], t0.Add(2*time.Hour).Format(time.RFC3339Nano)),
		fmt.Sprintf("%q fileSearchStores/s0 %s files=0", keys[0], t0.Format(time.RFC3339Nano)),
	}
	slices.SortFunc(want, func(x, y string) int { return cmp.Compare(x, y) })
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("List:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// concurrent: two clients put files of one manifest at once (an index's
// uploads finishing together, or two replicas), some of the same paths:
// every file is there once, with one of the entries put.
func concurrent(t *testing.T, open Open) {
	a, b := open(t)
	ctx, k := ctxOf(t), key("/work/repo", "token:alice")
	must(t, a.SetStore(ctx, k, "fileSearchStores/s1", t0))
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i, m := range []manifest.Manifests{a, b} {
		wg.Go(func() {
			for j := range n {
				path := fmt.Sprintf("own%d/f%d.go", i, j)
				if j%4 == 0 {
					path = fmt.Sprintf("shared/f%d.go", j)
				}
				if err := m.PutFile(ctx, k, path, entry(fmt.Sprintf("%d-%d", i, j))); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a concurrent PutFile: %v", err)
	}
	r := get(t, b, k)
	if len(r.Files) != 2*n-n/4 {
		t.Fatalf("%d files after concurrent puts, want %d", len(r.Files), 2*n-n/4)
	}
	for j := 0; j < n; j += 4 {
		e := r.Files[fmt.Sprintf("shared/f%d.go", j)]
		if e != entry(fmt.Sprintf("0-%d", j)) && e != entry(fmt.Sprintf("1-%d", j)) {
			t.Fatalf("shared/f%d.go is %+v, neither client's", j, e)
		}
	}
}

// badInput: a key, path, store, hash or document name out of bounds is
// refused with an error saying so, and changes nothing.
func badInput(t *testing.T, open Open) {
	a, b := open(t)
	ctx, k := ctxOf(t), key("/work/repo", "token:alice")
	must(t, a.SetStore(ctx, k, "fileSearchStores/s1", t0))
	must(t, a.PutFile(ctx, k, "a.go", entry("a")))
	long := func(n int) string { return strings.Repeat("x", n) }
	ok := entry("b")
	calls := map[string]func() error{
		"an empty key":          func() error { return a.SetStore(ctx, "", "fileSearchStores/s1", t0) },
		"a key too long":        func() error { return a.SetStore(ctx, long(manifest.MaxKeyBytes+1), "fileSearchStores/s1", t0) },
		"an empty store":        func() error { return a.SetStore(ctx, k, "", t0) },
		"a store name too long": func() error { return a.SetStore(ctx, k, long(manifest.MaxNameBytes+1), t0) },
		"an empty path":         func() error { return a.PutFile(ctx, k, "", ok) },
		"a path too long":       func() error { return a.PutFile(ctx, k, long(manifest.MaxPathBytes+1), ok) },
		"a path with NUL":       func() error { return a.PutFile(ctx, k, "a\x00b.go", ok) },
		"a path not UTF-8":      func() error { return a.PutFile(ctx, k, "a\xff.go", ok) },
		"a document too long": func() error {
			return a.PutFile(ctx, k, "b.go", manifest.Entry{Hash: ok.Hash, Document: long(manifest.MaxNameBytes + 1)})
		},
		"an empty document": func() error { return a.PutFile(ctx, k, "b.go", manifest.Entry{Hash: ok.Hash}) },
		"a hash too long": func() error {
			return a.PutFile(ctx, k, "b.go", manifest.Entry{Hash: long(manifest.MaxHashBytes + 1), Document: ok.Document})
		},
		"a hash with a space":      func() error { return a.PutFile(ctx, k, "b.go", manifest.Entry{Hash: "ab cd", Document: ok.Document}) },
		"a delete's path too long": func() error { return a.DeleteFile(ctx, k, long(manifest.MaxPathBytes+1)) },
		"a Get's key too long":     func() error { _, err := a.Get(ctx, long(manifest.MaxKeyBytes+1)); return err },
		"a Remove's empty key":     func() error { return a.Remove(ctx, "") },
	}
	for what, call := range calls {
		if err := call(); err == nil || !strings.Contains(err.Error(), "file search manifest:") {
			t.Errorf("%s: %v, want the manifest's refusal", what, err)
		}
	}
	r := get(t, b, k)
	if r.Store != "fileSearchStores/s1" || !r.Used.Equal(t0) || !equal(r.Files, map[string]manifest.Entry{"a.go": entry("a")}) {
		t.Fatalf("refused calls changed the manifest: %+v", r)
	}
	// At the bounds, accepted.
	must(t, a.PutFile(ctx, k, long(manifest.MaxPathBytes), manifest.Entry{Hash: long(manifest.MaxHashBytes), Document: long(manifest.MaxNameBytes)}))
	if r := get(t, b, k); r.Files[long(manifest.MaxPathBytes)].Document != long(manifest.MaxNameBytes) {
		t.Fatalf("a path, hash and name at their bounds were not kept")
	}
}

// maxFiles: a manifest keeps manifest.MaxFiles files; one more new path
// is refused (from either client), a put of a path it has is not, and a
// delete makes room.
func maxFiles(t *testing.T, open Open) {
	if race {
		t.Skip("filling a manifest to its bound is checked without -race")
	}
	a, b := open(t)
	ctx, k := ctxOf(t), key("/work/big", "token:alice")
	must(t, a.SetStore(ctx, k, "fileSearchStores/big", t0))
	Fill(t, a, k, manifest.MaxFiles)
	for _, m := range []manifest.Manifests{a, b} {
		if err := m.PutFile(ctx, k, "one-more.go", entry("x")); err == nil || !strings.Contains(err.Error(), fmt.Sprint(manifest.MaxFiles)) {
			t.Fatalf("a PutFile past %d files: %v, want it refused", manifest.MaxFiles, err)
		}
	}
	must(t, b.PutFile(ctx, k, Path(7), entry("replaced")))
	must(t, b.DeleteFile(ctx, k, Path(0)))
	must(t, a.PutFile(ctx, k, "one-more.go", entry("x")))
	r := get(t, b, k)
	if len(r.Files) != manifest.MaxFiles || r.Files[Path(7)] != entry("replaced") || r.Files["one-more.go"] != entry("x") {
		t.Fatalf("after a delete at the limit: %d files, %+v", len(r.Files), r.Files[Path(7)])
	}
}

// Path is the path of the i-th file Fill puts.
func Path(i int) string { return fmt.Sprintf("pkg%03d/file%05d.go", i%500, i) }

// Entry is the entry Fill puts for path i, a realistic size: a hex
// sha256 and a document name as the API makes them.
func Entry(i int) manifest.Entry {
	return manifest.Entry{Hash: fmt.Sprintf("%064x", i), Document: fmt.Sprintf("fileSearchStores/gemini-mcp-server-abc123/documents/file%05dgo-x1y2z3w4v5u6", i)}
}

// Fill puts n files into key's manifest (which has a store), eight
// callers at once.
func Fill(t testing.TB, m manifest.Manifests, k string, n int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if err := m.PutFile(ctx, k, Path(i), Entry(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("filling a manifest: %v", err)
	}
}

func equal(a, b map[string]manifest.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
