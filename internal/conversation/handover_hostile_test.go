package conversation

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// downJobs is a job store that is down: it makes no job, or (when
// created is set) makes one and then fails every change of it. tried is
// closed at the first call it fails: the hand-over was tried.
type downJobs struct {
	jobs.Store
	created bool
	tried   chan struct{}
	once    *sync.Once
}

func newDownJobs(st jobs.Store, created bool) downJobs {
	return downJobs{Store: st, created: created, tried: make(chan struct{}), once: &sync.Once{}}
}

var errDown = errors.New("the job store is down")

func (d downJobs) fail() error {
	d.once.Do(func() { close(d.tried) })
	return errDown
}

func (d downJobs) CreateJob(ctx context.Context, j jobs.Job, lim jobs.Limits) (jobs.Job, error) {
	if !d.created {
		return jobs.Job{}, d.fail()
	}
	return d.Store.CreateJob(ctx, j, lim)
}

func (d downJobs) UpdateJob(context.Context, jobs.Job) (jobs.Job, error) {
	return jobs.Job{}, d.fail()
}

// TestHandOverWithTheJobStoreDown: a call past JobAfter whose job cannot
// be made or started goes on as a call, its turn run once and not
// stopped, and answers with the turn's answer.
func TestHandOverWithTheJobStoreDown(t *testing.T) {
	t.Parallel()
	for _, created := range []bool{false, true} {
		mem := memstore.New(session.Options{})
		t.Cleanup(func() { _ = mem.Close() })
		b := newHeld()
		down := newDownJobs(jobs.Of(mem), created)
		d := New(Options{Backend: b, Store: mem, Jobs: down, DefaultCwd: t.TempDir(), JobAfter: time.Millisecond})
		go func() {
			<-b.started
			// The turn ends once the hand-over was tried and failed.
			<-down.tried
			close(b.release)
		}()
		res, err := d.Do(context.Background(), handoverRequest("q"))
		if err != nil || res.Meta["jobId"] != nil || res.Content[0].(*mcp.TextContent).Text != "the answer to q" {
			t.Fatalf("created %v: the call's result %+v %v; want the answer", created, res, err)
		}
		if n := b.runs.Load(); n != 1 {
			t.Errorf("created %v: the turn ran %d times", created, n)
		}
		select {
		case err := <-b.ended:
			t.Errorf("created %v: the turn was stopped: %v", created, err)
		default:
		}
	}
}

// TestHandOverRacesTheTurnsEnd: a turn that ends, or a call cancelled,
// right at JobAfter, many times: each call answers once, with its answer
// or a job whose result is that answer; none hangs. Run with -race.
func TestHandOverRacesTheTurnsEnd(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	for i := range 200 {
		b := newHeld()
		d := New(Options{Backend: b, Store: mem, Jobs: jobs.Of(mem), DefaultCwd: t.TempDir(), JobAfter: time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-b.started
			<-time.After(time.Millisecond)
			if i%2 == 0 {
				close(b.release)
			} else {
				cancel()
			}
		}()
		res, err := d.Do(ctx, handoverRequest("q"))
		cancel()
		if i%2 == 1 {
			// Cancelled: an error, or a job (handed over first).
			if err == nil && res.Meta["jobId"] == nil {
				t.Fatalf("%d: a cancelled call answered %+v", i, res)
			}
			if err == nil {
				close(b.release)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if id, _ := res.Meta["jobId"].(string); id != "" {
			j := untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status.Final() })
			got, err := j.CallToolResult()
			if j.Status != jobs.Completed || err != nil || got.Content[0].(*mcp.TextContent).Text != "the answer to q" {
				t.Fatalf("%d: the job %s %q: %+v %v", i, j.Status, j.Error, got, err)
			}
		} else if res.Content[0].(*mcp.TextContent).Text != "the answer to q" {
			t.Fatalf("%d: %+v", i, res)
		}
	}
}
