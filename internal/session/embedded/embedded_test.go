package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs/jobstest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/storetest"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the helper process of the multi-process
	// tests (process_test.go).
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	leaktest.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts session.Options) session.Store {
		s, err := Open(filepath.Join(t.TempDir(), "sessions.db"), opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func open(t testing.TB, path string, opts session.Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCloseGivesLeasesBack: a store that closes gives its leases back at
// once, not after LeaseTTL, to a waiter of another store on the file.
func TestCloseGivesLeasesBack(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	opts := session.Options{LeaseTTL: time.Hour} // only Close can free it in time
	a, b := open(t, db, opts), open(t, db, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Lease(ctx, idA); err != nil {
		t.Fatal(err)
	}
	var closed atomic.Bool
	done := make(chan error, 1)
	go func() {
		release, err := b.Lease(ctx, idA)
		if err == nil {
			release()
			if !closed.Load() {
				err = errFmt("another store took a held lease")
			}
		}
		done <- err
	}()
	closed.Store(true)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type errFmt string

func (e errFmt) Error() string { return string(e) }

// TestLeaseRenewedAcrossStores: a lease held for two LeaseTTLs stays
// its holder's, because the store renews it, even against another store
// (this process's own calls queue without asking the database).
func TestLeaseRenewedAcrossStores(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	opts := session.Options{LeaseTTL: 1500 * time.Millisecond}
	a, b := open(t, db, opts), open(t, db, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	release, err := a.Lease(ctx, idA)
	if err != nil {
		t.Fatal(err)
	}
	var released atomic.Bool
	done := make(chan error, 1)
	go func() {
		rel, err := b.Lease(ctx, idA)
		if err == nil {
			rel()
			if !released.Load() {
				err = errFmt("the other store took a lease its holder renews")
			}
		}
		done <- err
	}()
	tick := time.NewTicker(opts.LeaseTTL / 4)
	defer tick.Stop()
	for time.Since(start) < 2*opts.LeaseTTL {
		select {
		case err := <-done:
			t.Fatalf("after %v: %v", time.Since(start), err)
		case <-tick.C:
		}
	}
	released.Store(true)
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestFilesPrivate: the directory and the database files are the user's
// alone.
func TestFilesPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix file modes")
	}
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, filepath.Join(dir, "sessions.db"), session.Options{})
	if _, err := s.Touch(context.Background(), idA, session.Turn{Cwd: "/a"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory: %v %v", fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v, want 0600", e.Name(), fi.Mode(), err)
		}
	}
	if len(entries) < 2 {
		t.Errorf("want the database and its WAL, have %d files", len(entries))
	}
}

// TestErrorsOfTheDatabase: a store that cannot be written reports
// session.ErrUnavailable.
func TestErrorsOfTheDatabase(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), session.Options{})
	s.db.Close() // the database gone from under the store
	ctx := context.Background()
	if _, err := s.Touch(ctx, idA, session.Turn{}, time.Now()); !errorsIs(err, session.ErrUnavailable) {
		t.Errorf("Touch: %v", err)
	}
	if _, _, err := s.Get(ctx, idA); !errorsIs(err, session.ErrUnavailable) {
		t.Errorf("Get: %v", err)
	}
	if _, err := s.Lease(ctx, idA); !errorsIs(err, session.ErrUnavailable) {
		t.Errorf("Lease: %v", err)
	}
	if _, err := Open(t.TempDir(), session.Options{}); !errorsIs(err, session.ErrUnavailable) {
		t.Errorf("Open of a directory: %v", err)
	}
}

// TestImportOldFiles: a new database imports the old file store beside
// it, once, and leaves its files in place.
func TestImportOldFiles(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "sessions")
	if err := os.Mkdir(old, 0o700); err != nil {
		t.Fatal(err)
	}
	updated := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(old, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(id, cwd string, updated time.Time) string {
		data, _ := json.MarshalIndent(session.Record{ID: id, Cwd: cwd, Model: "m", Created: updated, Updated: updated,
			Turns: 2, Backend: "api", Owner: "o"}, "", "  ")
		return string(data) + "\n"
	}
	write(idA+".json", rec(idA, "/a", updated))
	write(idB+".json", rec(idB, "/b", updated.Add(time.Hour)))
	// Turns, the last one torn by a crash.
	write(idA+".turns.jsonl", `{"role":"user","text":"one"}`+"\n"+`{"role":"model","text":"two"}`+"\n"+`{"role":"us`)
	write("not-a-session.json", "{}")
	write("0000dead-0000-4000-8000-000000000000.json", "{corrupt")
	write(".tmp-123", "half a record")

	s := open(t, filepath.Join(dir, "sessions.db"), session.Options{})
	ctx := context.Background()
	recs, _, err := s.List(ctx, session.Filter{Limit: 10})
	if err != nil || len(recs) != 2 || recs[0].ID != idB || recs[1].ID != idA {
		t.Fatalf("imported records: %+v %v", recs, err)
	}
	if r := recs[1]; r.Cwd != "/a" || r.Turns != 2 || !r.Updated.Equal(updated) || r.Owner != "o" || r.Backend != "api" {
		t.Errorf("imported record: %+v", r)
	}
	turns, ok, err := s.LoadTurns(ctx, idA)
	if !ok || err != nil || len(turns) != 2 || string(turns[1]) != `{"role":"model","text":"two"}` {
		t.Fatalf("imported turns: %s %v %v", turns, ok, err)
	}
	// Later turns follow the imported ones.
	if err := s.AppendTurn(ctx, idA, json.RawMessage(`{"n":3}`)); err != nil {
		t.Fatal(err)
	}
	if turns, _, _ := s.LoadTurns(ctx, idA); len(turns) != 3 || string(turns[2]) != `{"n":3}` {
		t.Fatalf("turns after the import: %s", turns)
	}
	// The old files stay.
	if _, err := os.Stat(filepath.Join(old, idA+".turns.jsonl")); err != nil {
		t.Errorf("an old file is gone: %v", err)
	}
	s.Close()

	// Once only: a later open imports nothing, even files that appeared
	// since (written by an older server still running).
	if err := s.Delete(ctx, idA); err == nil {
		t.Fatal("a closed store deleted")
	}
	write(strings.Replace(idA, "0b", "ff", 1)+".json", rec(strings.Replace(idA, "0b", "ff", 1), "/c", updated))
	s2 := open(t, filepath.Join(dir, "sessions.db"), session.Options{})
	if recs, _, err := s2.List(ctx, session.Filter{Limit: 10}); err != nil || len(recs) != 2 {
		t.Fatalf("after a second open: %d records %v", len(recs), err)
	}
	if turns, _, _ := s2.LoadTurns(ctx, idA); len(turns) != 3 {
		t.Fatalf("a second open imported the turns again: %d turns", len(turns))
	}
}

func errorsIs(err, target error) bool { return err != nil && errors.Is(err, target) }

// TestJobsConformance: two stores on one file stand for two processes
// sharing it.
func TestJobsConformance(t *testing.T) {
	jobstest.Run(t, func(t *testing.T) (jobs.Store, jobs.Store) {
		db := filepath.Join(t.TempDir(), "sessions.db")
		return open(t, db, session.Options{}), open(t, db, session.Options{})
	})
}

// BenchmarkJobs measures a poll of a job among 1,000 idle ones, and the
// bytes those take in the database file.
func BenchmarkJobs(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "sessions.db"), session.Options{})
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
	stored := jobstest.Fill(b, s, 1000)
	jobstest.ReportSize(b, "idle-1000", size()-before, 1000, "file-B/job")
	jobstest.BenchPoll(b, s, stored)
}

// TestJobsSurviveRestart: a job a store wrote is whole in a store opened
// on the file later, as after a restart of the server, and is deleted
// from the file once expired.
func TestJobsSurviveRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	a := open(t, db, session.Options{})
	j, _ := jobs.New("token:alice", "research", time.Hour, time.Now())
	j, err := a.CreateJob(t.Context(), j, jobs.Limits{})
	if err == nil {
		_ = j.Start(time.Now())
		_ = j.SetResume("interaction-1", time.Now())
		j, err = a.UpdateJob(t.Context(), j)
	}
	if err != nil {
		t.Fatal(err)
	}
	short, _ := jobs.New("token:alice", "chat", time.Millisecond, time.Now())
	if _, err := a.CreateJob(t.Context(), short, jobs.Limits{}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	for !time.Now().After(short.Expires.Add(time.Millisecond)) { // the store counts in milliseconds
		time.Sleep(time.Millisecond)
	}
	b := open(t, db, session.Options{}) // Open deletes what has expired
	got, ok, err := b.GetJob(t.Context(), "token:alice", j.ID)
	if err != nil || !ok || got.Resume != "interaction-1" || got.Version != j.Version || got.Status != jobs.Working {
		t.Fatalf("after a restart: %+v, %v, %v", got, ok, err)
	}
	var rows int
	if err := b.db.QueryRow(`SELECT count(*) FROM jobs`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d rows of jobs after the expired one's clean-up, %v; want 1", rows, err)
	}
}
