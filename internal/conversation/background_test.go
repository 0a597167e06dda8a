package conversation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// blocking is a backend whose turns report that Gemini runs, then wait
// for their ctx to end; ended receives why.
type blocking struct{ ended chan error }

func (b *blocking) Name() string          { return "oneshot" }
func (b *blocking) Family() config.Family { return config.FamilyCLI }
func (b *blocking) Close()                {}
func (b *blocking) Run(ctx context.Context, t backend.Turn) (*backend.Answer, error) {
	if t.Confirm != nil {
		return nil, errors.New("a background turn was given a way to ask the user")
	}
	if t.Observer != nil {
		t.Observer.Started()
	}
	<-ctx.Done()
	b.ended <- context.Cause(ctx)
	return nil, ctx.Err()
}

// untilJob waits (on the store's own wait) until owner's job id satisfies
// done, and returns it.
func untilJob(t *testing.T, st jobs.Store, id string, done func(jobs.Job) bool) jobs.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure guard only
	defer cancel()
	var v int64
	for {
		j, ok, err := st.WaitJob(ctx, "", id, v, jobs.MaxWait)
		if err != nil || !ok {
			t.Fatalf("job %s: %v %v", id, ok, err)
		}
		if done(j) {
			return j
		}
		v = j.Version
	}
}

// TestBackgroundTurn: a background turn answers at once with its job,
// runs without confirmations, keeps its progress in the job, stops at the
// job's cancel (ending cancelled) and, when the server stops under it,
// ends failed.
func TestBackgroundTurn(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	life, stop := context.WithCancel(context.Background())
	defer stop()
	b := &blocking{ended: make(chan error, 2)}
	d := New(Options{Backend: b, Store: mem, Jobs: jobs.Of(mem), DefaultCwd: t.TempDir(), Lifetime: life})
	start := func() string {
		t.Helper()
		res, err := d.Do(context.Background(), Request{Turn: backend.Turn{Prompt: "long"}, Render: rendered, Background: true,
			Call: &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "chat"}}})
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.Meta["jobId"].(string)
		if id == "" || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Started job "+id+": chat runs in the background") {
			t.Fatalf("the call's result: %+v", res)
		}
		return id
	}

	id := start()
	j := untilJob(t, mem, id, func(j jobs.Job) bool { return strings.HasPrefix(j.Message, "gemini is running") })
	if j.Status != jobs.Working || j.Tool != "chat" {
		t.Fatalf("the running job: %+v", j)
	}
	if _, err := jobs.Cancel(context.Background(), mem, "", id, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := <-b.ended; !errors.Is(err, errJobCancelled) {
		t.Errorf("the cancelled turn ended by %v", err)
	}
	untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status == jobs.Cancelled })

	id = start()
	untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status == jobs.Working })
	stop()
	<-b.ended
	if j := untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status.Final() }); j.Status != jobs.Failed || j.Error != errServerStopped {
		t.Errorf("the job of a server that stopped: %s %q", j.Status, j.Error)
	}
}

// TestBackgroundLimit: a caller at its limit of live jobs is refused a
// new one with an error saying so, and nothing runs; without a job store,
// a background call is refused.
func TestBackgroundLimit(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	life, stop := context.WithCancel(context.Background())
	b := &blocking{ended: make(chan error, 1)}
	t.Cleanup(func() { stop(); <-b.ended })
	r := Request{Turn: backend.Turn{Prompt: "long"}, Render: rendered, Background: true}
	d := New(Options{Backend: b, Store: mem, Jobs: jobs.Of(mem), JobLimits: jobs.Limits{PerOwner: 1}, DefaultCwd: t.TempDir(), Lifetime: life})
	if _, err := d.Do(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Do(context.Background(), r); !errors.Is(err, jobs.ErrLimit) || !strings.Contains(err.Error(), "this caller has 1 jobs running or waiting") {
		t.Errorf("a second job at a limit of 1: %v", err)
	}
	none := New(Options{Backend: b, Store: mem, DefaultCwd: t.TempDir()})
	if _, err := none.Do(context.Background(), r); err == nil || !strings.Contains(err.Error(), "runs no background jobs") {
		t.Errorf("a background call without a job store: %v", err)
	}
}

// TestBackgroundPrepare: a background turn's slow material
// (Material.Prepare, a File Search index) is the job's work: the call
// answers at once while it runs, its progress is the job's, the job's
// cancel stops it and Gemini never runs; its stores reach the turn; and
// Gather's errors still fail the call at once, with no job made.
func TestBackgroundPrepare(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	life, stop := context.WithCancel(context.Background())
	defer stop()
	b := &blocking{ended: make(chan error, 1)}
	d := New(Options{Backend: b, Store: mem, Jobs: jobs.Of(mem), DefaultCwd: t.TempDir(), Lifetime: life})
	prepared := make(chan error, 1)
	r := Request{Turn: backend.Turn{Prompt: "long"}, Render: rendered, Background: true,
		Call: &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "chat"}},
		Gather: func(context.Context, string) (Material, error) {
			return Material{Prompt: "long", Prepare: func(ctx context.Context) ([]string, error) {
				GatherProgress(ctx, "indexing for File Search: 0 of 9 files")
				<-ctx.Done()
				prepared <- context.Cause(ctx)
				return nil, ctx.Err()
			}}, nil
		}}
	res, err := d.Do(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.Meta["jobId"].(string)
	untilJob(t, mem, id, func(j jobs.Job) bool { return strings.HasPrefix(j.Message, "indexing for File Search: 0 of 9 files") })
	if _, err := jobs.Cancel(context.Background(), mem, "", id, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := <-prepared; !errors.Is(err, errJobCancelled) {
		t.Errorf("the cancelled preparation ended by %v", err)
	}
	untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status == jobs.Cancelled })
	select {
	case err := <-b.ended:
		t.Errorf("Gemini ran after the preparation was cancelled (%v)", err)
	default:
	}

	// The stores Prepare returns are the turn's.
	got := make(chan []string, 1)
	cb := &capturing{got: got}
	d2 := New(Options{Backend: cb, Store: mem, DefaultCwd: t.TempDir()})
	if _, err := d2.Do(context.Background(), Request{Turn: backend.Turn{Prompt: "p"}, Render: rendered,
		Gather: func(context.Context, string) (Material, error) {
			return Material{Prompt: "p", FileSearchStores: []string{"fileSearchStores/a"},
				Prepare: func(context.Context) ([]string, error) { return []string{"fileSearchStores/b"}, nil }}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	if s := <-got; strings.Join(s, ",") != "fileSearchStores/a,fileSearchStores/b" {
		t.Errorf("the turn's stores: %q", s)
	}

	// Gather's error fails the call at once: no job.
	r.Gather = func(context.Context, string) (Material, error) {
		return Material{}, errors.New("a files entry is empty")
	}
	if _, err := d.Do(context.Background(), r); err == nil || err.Error() != "a files entry is empty" {
		t.Errorf("a background call whose Gather failed: %v", err)
	}
	if js, err := jobs.Of(mem).ListJobs(context.Background(), "", 10); err != nil || len(js) != 1 {
		t.Errorf("jobs after a refused call: %d %v, want the first one only", len(js), err)
	}
}

// capturing answers at once, sending the File Search stores of its turn.
type capturing struct{ got chan []string }

func (c *capturing) Name() string          { return "api" }
func (c *capturing) Family() config.Family { return config.FamilyCLI }
func (c *capturing) Close()                {}
func (c *capturing) Run(_ context.Context, t backend.Turn) (*backend.Answer, error) {
	c.got <- t.Builtins.FileSearchStores
	return &backend.Answer{Text: "ok"}, nil
}
