package conversation

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// held is a backend whose turns report that Gemini runs (started hears
// of it), then answer once release is closed, or end with their ctx
// (ended receives why); runs counts them.
type held struct {
	started chan struct{}
	release chan struct{}
	ended   chan error
	runs    atomic.Int32
}

func newHeld() *held {
	return &held{started: make(chan struct{}, 4), release: make(chan struct{}), ended: make(chan error, 4)}
}

func (b *held) Name() string          { return "oneshot" }
func (b *held) Family() config.Family { return config.FamilyCLI }
func (b *held) Close()                {}
func (b *held) Run(ctx context.Context, t backend.Turn) (*backend.Answer, error) {
	b.runs.Add(1)
	if t.Observer != nil {
		t.Observer.Started()
	}
	b.started <- struct{}{}
	select {
	case <-b.release:
		return &backend.Answer{Text: "the answer to " + t.Prompt}, nil
	case <-ctx.Done():
		b.ended <- context.Cause(ctx)
		return nil, ctx.Err()
	}
}

// answered renders the answer's text.
func answered(_ context.Context, o Outcome) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: o.Answer.Text}}}, nil
}

// keep is a Request.Finish that keeps Do's outcome.
func keep(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) { return res, err }

func handoverRequest(prompt string) Request {
	return Request{Turn: backend.Turn{Prompt: prompt}, Render: answered, Finish: keep,
		Call: &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "chat"}}}
}

// TestHandOver: a call still running at JobAfter answers with a result
// naming a job, and the same turn (run once) goes on as that job: the
// call's end no longer stops it, its progress goes to the job, and its
// answer becomes the job's result, the one the call would have returned.
func TestHandOver(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	b := newHeld()
	d := New(Options{Backend: b, Store: mem, Jobs: jobs.Of(mem), DefaultCwd: t.TempDir(), JobAfter: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	res, err := d.Do(ctx, handoverRequest("the question"))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.Meta["jobId"].(string)
	text := res.Content[0].(*mcp.TextContent).Text
	if id == "" || !strings.Contains(text, "ran past this server's limit of 20ms") || !strings.Contains(text, "Started job "+id+": chat runs in the background") {
		t.Fatalf("the call's result: %q %+v", text, res.Meta)
	}
	// The call is over: its end must not stop the turn.
	cancel()
	j := untilJob(t, mem, id, func(j jobs.Job) bool { return strings.HasPrefix(j.Message, "gemini is running") })
	if j.Status != jobs.Working || j.Tool != "chat" || j.Runner == nil || *j.Runner != jobs.Self() {
		t.Fatalf("the job running the turn: %+v", j)
	}
	close(b.release)
	j = untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status.Final() })
	if j.Status != jobs.Completed {
		t.Fatalf("the job ended %s: %s", j.Status, j.Error)
	}
	got, err := j.CallToolResult()
	if err != nil || got.Content[0].(*mcp.TextContent).Text != "the answer to the question" {
		t.Fatalf("the job's result: %+v %v", got, err)
	}
	if n := b.runs.Load(); n != 1 {
		t.Errorf("the turn ran %d times", n)
	}
	select {
	case err := <-b.ended:
		t.Errorf("the turn was stopped: %v", err)
	default:
	}
}

// TestHandOverCancel: a call cancelled before JobAfter stops its turn at
// once and makes no job; a handed-over turn stops at its job's cancel,
// and at the server's end, which fails its job.
func TestHandOverCancel(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	life, stop := context.WithCancel(context.Background())
	defer stop()
	b := newHeld()
	d := New(Options{Backend: b, Store: mem, Jobs: jobs.Of(mem), DefaultCwd: t.TempDir(), JobAfter: time.Hour, Lifetime: life})

	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-b.started; cancel() }()
	if _, err := d.Do(ctx, handoverRequest("q")); err == nil {
		t.Fatal("a cancelled call answered")
	}
	if err := <-b.ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled call's turn ended by %v", err)
	}
	if js, err := jobs.Of(mem).ListJobs(context.Background(), "", 10); err != nil || len(js) != 0 {
		t.Errorf("a call cancelled before the limit made jobs: %+v %v", js, err)
	}

	d.o.JobAfter = 20 * time.Millisecond
	start := func() string {
		t.Helper()
		res, err := d.Do(context.Background(), handoverRequest("q"))
		if err != nil {
			t.Fatal(err)
		}
		<-b.started
		return res.Meta["jobId"].(string)
	}
	id := start()
	if _, err := jobs.Cancel(context.Background(), mem, "", id, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := <-b.ended; !errors.Is(err, errJobCancelled) {
		t.Errorf("the handed-over turn ended by %v", err)
	}
	untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status == jobs.Cancelled })

	id = start()
	stop()
	<-b.ended
	if j := untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status.Final() }); j.Status != jobs.Failed || j.Error != errServerStopped {
		t.Errorf("the job of a server that stopped: %s %q", j.Status, j.Error)
	}
}

// TestNoHandOver: a call of a tool whose result a job cannot hold (no
// Finish) waits past JobAfter for its result.
func TestNoHandOver(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	b := newHeld()
	d := New(Options{Backend: b, Store: mem, Jobs: jobs.Of(mem), DefaultCwd: t.TempDir(), JobAfter: time.Millisecond})
	r := handoverRequest("q")
	r.Finish = nil
	go func() {
		<-b.started
		// Well past the limit (time passing, not a wait for an event: a
		// slow machine only makes it longer).
		<-time.After(50 * time.Millisecond)
		close(b.release)
	}()
	res, err := d.Do(context.Background(), r)
	if err != nil || res.Meta["jobId"] != nil || res.Content[0].(*mcp.TextContent).Text != "the answer to q" {
		t.Fatalf("the call's result: %+v %v", res, err)
	}
	if js, err := jobs.Of(mem).ListJobs(context.Background(), "", 10); err != nil || len(js) != 0 {
		t.Errorf("jobs of a call that cannot be one: %+v %v", js, err)
	}
}
