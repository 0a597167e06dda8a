package session

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	idA = "b9aadb6c-5aca-4c65-b929-02b095cc2b94"
	idB = "a11a840f-092c-4b40-bb38-f8efd2d5e0b5"
	idC = "83762da1-bb59-4a1e-b6df-4c014f7112fe"
)

func TestTouchGetSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if _, err := s.Touch(idA, Turn{Cwd: "/w1", Model: "gemini-x"}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Touch(idA, Turn{Cwd: "/w1"}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// A new Store on the same directory is a restarted server; the old
	// one's Close wrote its last update.
	s.Close()
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := s2.Get("B9AADB6C-5ACA-4C65-B929-02B095CC2B94")
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	want := Record{ID: idA, Cwd: "/w1", Model: "gemini-x", Created: t0, Updated: t0.Add(time.Minute), Turns: 2}
	if !r.Created.Equal(want.Created) || !r.Updated.Equal(want.Updated) || r.ID != want.ID || r.Cwd != want.Cwd || r.Model != want.Model || r.Turns != want.Turns {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
	fi, err := os.Stat(s.Dir())
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("store dir mode %v %v", fi.Mode(), err)
	}
	if _, ok, err := s2.Get(idB); ok || err != nil {
		t.Fatalf("unknown id: %v %v", ok, err)
	}
	if _, _, err := s2.Get("../../etc/passwd"); err == nil {
		t.Fatal("a path was accepted as an id")
	}
}

func TestLatest(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, ok, err := s.Latest("", nil); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	t0 := time.Now()
	s.Touch(idA, Turn{Cwd: "/w1"}, t0)
	s.Touch(idB, Turn{Cwd: "/w2"}, t0.Add(time.Second))
	s.Touch(idC, Turn{Cwd: "/w1"}, t0.Add(2*time.Second))
	s.Touch(idA, Turn{Cwd: "/w1"}, t0.Add(3*time.Second))
	if r, ok, _ := s.Latest("", nil); !ok || r.ID != idA {
		t.Fatalf("latest overall: %+v", r)
	}
	if r, ok, _ := s.Latest("/w2", nil); !ok || r.ID != idB {
		t.Fatalf("latest in /w2: %+v", r)
	}
	if _, ok, _ := s.Latest("/w3", nil); ok {
		t.Fatal("latest in a directory with no sessions")
	}
	// Stray and corrupt files are passed over.
	os.WriteFile(filepath.Join(s.Dir(), "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(s.Dir(), idB+".json"), []byte("{broken"), 0o600)
	if r, ok, _ := s.Latest("/w1", nil); !ok || r.ID != idA {
		t.Fatalf("with stray files: %+v", r)
	}
	// A corrupt record is replaced by the next turn, not left blocking.
	if r, err := s.Touch(idB, Turn{Cwd: "/w2"}, t0.Add(4*time.Second)); err != nil || r.Turns != 1 {
		t.Fatalf("touch over corrupt: %+v %v", r, err)
	}
}

func TestConcurrentTouchCountsEveryTurn(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Touch(idA, Turn{Cwd: "/w"}, time.Now()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s.Flush()
	r, _, _ := s.Get(idA)
	if r.Turns != 20 {
		t.Fatalf("turns = %d, want 20", r.Turns)
	}
	entries, _ := os.ReadDir(s.Dir())
	if len(entries) != 1 {
		t.Fatalf("left %d files, want 1 (no temp files)", len(entries))
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if d, err := DefaultDir(); err != nil || d != filepath.Join("/x/state", "gemini-mcp-server") {
		t.Fatalf("got %q %v", d, err)
	}
}

// TestOwnerAndClient checks that a record keeps the token that started it
// whoever continues it, that Latest can pick one client's sessions, and
// that records written before owners were kept still read.
func TestOwnerAndClient(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	t0 := time.Now()
	s.Touch(idA, Turn{Cwd: "/w", Owner: "t1", Client: "token:t1"}, t0)
	s.Touch(idB, Turn{Cwd: "/w", Owner: "t2", Client: "token:t2"}, t0.Add(time.Second))
	r, err := s.Touch(idA, Turn{Cwd: "/w", Owner: "t2", Client: "token:t2"}, t0.Add(2*time.Second))
	if err != nil || r.Owner != "t1" || r.LastClient != "token:t2" {
		t.Fatalf("continued by another client: %+v %v", r, err)
	}
	byOwner := func(o string) func(Record) bool { return func(r Record) bool { return r.Owner == o } }
	if r, ok, _ := s.Latest("", byOwner("t2")); !ok || r.ID != idB {
		t.Fatalf("latest of t2: %+v", r)
	}
	if _, ok, _ := s.Latest("", byOwner("t3")); ok {
		t.Fatal("a client without sessions got one")
	}
	old := `{"id":"` + idC + `","cwd":"/w","created":"2026-01-01T00:00:00Z","updated":"2026-01-01T00:00:00Z","turns":1}`
	if err := os.WriteFile(filepath.Join(s.Dir(), idC+".json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := s.Get(idC); !ok || err != nil || r.Owner != "" || r.Cwd != "/w" {
		t.Fatalf("an old record: %+v %v %v", r, ok, err)
	}
}

// TestOpenRemovesStaleTemps checks that temp files left by a write that was
// killed half-way are removed at start, while a fresh one, which another
// process may be writing right now, and records stay.
func TestOpenRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Touch(idA, Turn{Cwd: "/w"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	stale, fresh := filepath.Join(s.Dir(), ".tmp-123"), filepath.Join(s.Dir(), ".tmp-456")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("{half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Times far from now, so that a slow machine cannot blur them.
	if err := os.Chtimes(stale, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(fresh, time.Now().Add(time.Hour), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temp file is still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("the fresh temp file was removed: %v", err)
	}
	if _, ok, err := s.Get(idA); !ok || err != nil {
		t.Errorf("the record went: %v %v", ok, err)
	}
}

// TestRecordBackend: a record keeps the backend family of its first turn,
// and a record written before families were kept counts as the CLI's.
func TestRecordBackend(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id, now := NewUUID(), time.Now()
	if r, err := s.Touch(id, Turn{Cwd: "/w", Backend: "api"}, now); err != nil || r.Family() != "api" {
		t.Fatalf("first turn: %+v %v", r, err)
	}
	if r, err := s.Touch(id, Turn{Cwd: "/w", Backend: "cli"}, now); err != nil || r.Family() != "api" {
		t.Fatalf("a later turn changed the family: %+v %v", r, err)
	}
	old := NewUUID()
	if err := os.WriteFile(filepath.Join(s.Dir(), old+".json"), []byte(`{"id":"`+old+`","cwd":"/w","turns":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := s.Get(old); !ok || err != nil || r.Family() != "cli" {
		t.Fatalf("old record: %+v %v %v", r, ok, err)
	}
}

// TestUpdatesWrittenInTheBackground checks that a new record is on disk
// when Touch returns (so other processes find it), that an update is
// seen at once by this process and written later, that the file on disk
// is always a whole record (what a kill -9 would leave), and that Close
// writes what is pending.
func TestUpdatesWrittenInTheBackground(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if _, err := s.Touch(idA, Turn{Cwd: "/w"}, t0); err != nil {
		t.Fatal(err)
	}
	// Another process (another Store) finds the new record at once.
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok, err := other.Get(idA); !ok || err != nil || r.Turns != 1 {
		t.Fatalf("another process: %+v %v %v", r, ok, err)
	}
	// Writes of updates wait for the test: Touch returns all the same,
	// and the file still holds the first turn whole meanwhile.
	release, entered := make(chan struct{}), make(chan struct{}, 10)
	var writes atomic.Int32
	s.writeFile = func(p string, r Record) error {
		writes.Add(1)
		entered <- struct{}{}
		<-release
		return writeAtomic(p, r)
	}
	r, err := s.Touch(idA, Turn{Cwd: "/w", Model: "m2"}, t0.Add(time.Second))
	if err != nil || r.Turns != 2 {
		t.Fatalf("update: %+v %v", r, err)
	}
	// More updates while the first is being written make one more write.
	<-entered
	for i := 0; i < 5; i++ {
		if _, err := s.Touch(idA, Turn{Cwd: "/w", Model: "m2"}, t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, _ := s.Get(idA); !ok || got.Turns != 7 || got.Model != "m2" {
		t.Fatalf("this process sees %+v", got)
	}
	if got, _, err := readRecord(filepath.Join(s.Dir(), idA+".json")); err != nil || (got.Turns != 1 && got.Turns != 2) {
		t.Fatalf("the file is not a whole record: %+v %v", got, err)
	}
	close(release)
	s.Close()
	if got, ok, err := other.Get(idA); !ok || err != nil || got.Turns != 7 || got.Model != "m2" {
		t.Fatalf("after Close: %+v %v %v", got, ok, err)
	}
	if n := writes.Load(); n != 2 {
		t.Fatalf("%d writes for 6 updates, want 2", n)
	}
	entries, _ := os.ReadDir(s.Dir())
	if len(entries) != 1 {
		t.Fatalf("left %d files, want 1 (no temp files)", len(entries))
	}
}
