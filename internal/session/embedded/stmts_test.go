package embedded

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// compiled counts the SQL texts the counting driver has handed to SQLite
// to compile: every Prepare, and every Exec or Query run on a connection
// rather than on a prepared statement.
var compiled atomic.Int64

var registerCounting sync.Once

const idC = "2d3e4f50-6172-4c8d-ae9f-a0b1c2d3e4f5"

// countingDriver is modernc.org/sqlite's driver behind a counter of
// compiled SQL.
type countingDriver struct{ driver.Driver }

func (d countingDriver) Open(name string) (driver.Conn, error) {
	c, err := d.Driver.Open(name)
	if err != nil {
		return nil, err
	}
	return countingConn{c.(sqliteConn)}, nil
}

// sqliteConn is what database/sql uses of a modernc.org/sqlite
// connection; countingConn passes all of it on, so that the store runs
// as with the driver itself.
type sqliteConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
	driver.Pinger
}

type countingConn struct{ sqliteConn }

func (c countingConn) Prepare(query string) (driver.Stmt, error) {
	compiled.Add(1)
	return c.sqliteConn.Prepare(query)
}

func (c countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	compiled.Add(1)
	return c.sqliteConn.PrepareContext(ctx, query)
}

func (c countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	compiled.Add(1)
	return c.sqliteConn.ExecContext(ctx, query, args)
}

func (c countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	compiled.Add(1)
	return c.sqliteConn.QueryContext(ctx, query, args)
}

// useCountingDriver makes the stores the test opens count the SQL they
// compile, in compiled.
func useCountingDriver(t *testing.T) {
	registerCounting.Do(func() {
		db, err := sql.Open("sqlite", "")
		if err != nil {
			t.Fatal(err)
		}
		sql.Register("sqlite-counting", countingDriver{db.Driver()})
		db.Close()
	})
	driverName = "sqlite-counting"
	t.Cleanup(func() { driverName = "sqlite" })
}

// TestHotPathsCompileNoSQL: once the store has run each call of a turn
// and of a job's poll, running them again compiles no SQL: they use the statements prepared
// at Open.
func TestHotPathsCompileNoSQL(t *testing.T) {
	useCountingDriver(t)

	// LeaseTTL and TTL so long that the background work does not run
	// during the test; renewLeases is called below instead. A budget of
	// pages that holds one answer only, so that PutAnswer drops the
	// oldest.
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), session.Options{LeaseTTL: time.Hour, MaxPagedBytes: 10})
	ctx := context.Background()
	job, _ := jobs.New("token:alice", "research", time.Hour, time.Now())
	job, err := s.CreateJob(ctx, job, jobs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	turn := func() {
		t.Helper()
		release, err := s.Lease(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		s.renewLeases()
		if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/p", Model: "m"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Get(ctx, idA); !ok || err != nil {
			t.Fatalf("Get: %v %v", ok, err)
		}
		if err := s.AppendTurn(ctx, idA, benchTurn(1)); err != nil {
			t.Fatal(err)
		}
		if turns, _, err := s.LoadTurns(ctx, idA); len(turns) == 0 || err != nil {
			t.Fatalf("LoadTurns: %d turns, %v", len(turns), err)
		}
		for _, id := range []string{idB, idC} {
			if err := s.PutAnswer(ctx, session.PagedAnswer{ID: id, SessionID: idA, Pages: []string{"ten bytes!"}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok, err := s.GetAnswer(ctx, idC); !ok || err != nil {
			t.Fatalf("GetAnswer: %v %v", ok, err)
		}
		// A job's poll: a read, and a wait that finds it changed.
		if _, ok, err := s.GetJob(ctx, job.Owner, job.ID); !ok || err != nil {
			t.Fatalf("GetJob: %v %v", ok, err)
		}
		if _, ok, err := s.WaitJob(ctx, job.Owner, job.ID, 0, time.Minute); !ok || err != nil {
			t.Fatalf("WaitJob: %v %v", ok, err)
		}
		release()
		if err := s.Delete(ctx, idA); err != nil {
			t.Fatal(err)
		}
	}
	turn()
	before := compiled.Load()
	turn()
	if n := compiled.Load() - before; n != 0 {
		t.Errorf("the second turn compiled %d SQL texts, want 0", n)
	}
}
