//go:build unix

package filesearch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A repository that changes while it is indexed: after the scan, files
// are swapped for a symlink out of the root and for a FIFO. The index
// must neither upload what lies outside the root nor block on the FIFO.
func TestIndexOfFilesSwappedDuringTheIndex(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "id_ed25519.txt")
	if err := os.WriteFile(outside, []byte("OUTSIDE-THE-ROOT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write(t, root, "a.go", "package a\n")
	write(t, root, "link.go", "package link\n")
	write(t, root, "pipe.go", "package pipe\n")
	var once sync.Once
	swap := &hook{Remote: f.api, before: func(string) {
		once.Do(func() {
			for _, p := range []string{"link.go", "pipe.go"} {
				if err := os.Remove(filepath.Join(root, p)); err != nil {
					t.Error(err)
				}
			}
			if err := os.Symlink(outside, filepath.Join(root, "link.go")); err != nil {
				t.Error(err)
			}
			if err := syscall.Mkfifo(filepath.Join(root, "pipe.go"), 0o600); err != nil {
				t.Error(err)
			}
		})
	}}
	ix := f.indexer(swap, Options{Concurrency: 1})
	type result struct {
		rep *Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := ix.Index(context.Background(), root, "alice")
		done <- result{rep, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		// Unblock the reader so that the goroutine can end.
		if w, err := os.OpenFile(filepath.Join(root, "pipe.go"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("the index blocked on a file swapped for a FIFO")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	for name, text := range f.docs(r.rep.Store) {
		if strings.Contains(text, "OUTSIDE-THE-ROOT") {
			t.Errorf("document %s holds the file outside the root a symlink swapped in points to", name)
		}
	}
	if r.rep.Skipped < 2 {
		t.Errorf("report %+v: want the two swapped files skipped", r.rep)
	}
}

// A repository whose file names are not UTF-8 (Linux allows any bytes
// but NUL and '/'): the rest of the root is indexed, and a second index
// uploads nothing again.
func TestIndexOfFileNamesNotUTF8(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	write(t, root, "a.go", "package a\n")
	write(t, root, "b\xff\xfe.go", "package b\n")
	write(t, root, "new\nline.go", "package c\n")
	ix := f.indexer(nil, Options{})
	rep := f.index(ix, root, "alice")
	docs := f.docs(rep.Store)
	if rep.Files != 2 || len(docs) != 2 || docs["a.go"] != "package a\n" || docs["new\nline.go"] != "package c\n" || rep.SkippedBy[SkipName] != 1 {
		t.Fatalf("first index %+v, documents %q", rep, docs)
	}
	again := f.index(ix, root, "alice")
	if again.Uploaded != 0 || again.Deleted != 0 || again.Files != rep.Files || len(f.docs(rep.Store)) != rep.Files {
		t.Fatalf("second index %+v after %+v; want nothing uploaded or deleted again", again, rep)
	}
}

// A file deeper than a document's display name may be long (512
// characters; Linux allows paths of 4096 bytes): it is indexed, and
// cited by its whole path.
func TestIndexOfAPathLongerThanADisplayName(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	deep := strings.Repeat("d123456789/", 60) + "ü.go" // 664 characters
	write(t, root, deep, "package deep\n\nfunc Deep() {}\n")
	write(t, root, "a.go", "package a\n")
	rep := f.index(f.indexer(nil, Options{}), root, "alice")
	if rep.Files != 2 || rep.Uploaded != 2 {
		t.Fatalf("index %+v", rep)
	}
	var path string
	for _, d := range f.fake.Documents(rep.Store) {
		for _, m := range d.CustomMetadata {
			if v, _ := m["stringValue"].(string); m["key"] == "path" && v != "a.go" {
				path = v
			}
		}
	}
	if path != deep {
		t.Fatalf("the deep file's path in its metadata: %q", path)
	}
}

// A repository of a 10 GB sparse file, a symlink loop, a symlink to a
// device and a FIFO, found by the scan: the index skips them and
// uploads the rest, without reading the sparse file or blocking.
func TestIndexOfSpecialFiles(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	write(t, root, "a.go", "package a\n")
	big, err := os.Create(filepath.Join(root, "big.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(10 << 30); err != nil {
		t.Fatal(err)
	}
	big.Close()
	for _, l := range [][2]string{{"loop1.go", "loop2.go"}, {"loop2.go", "loop1.go"}, {"/dev/zero", "zero.go"}} {
		if err := os.Symlink(l[0], filepath.Join(root, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.go"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := f.index(f.indexer(nil, Options{}), root, "alice")
	if docs := f.docs(rep.Store); rep.Files != 1 || len(docs) != 1 || docs["a.go"] != "package a\n" || rep.Skipped != 5 {
		t.Fatalf("index %+v, documents %q; want a.go alone, the 5 others skipped", rep, docs)
	}
}
