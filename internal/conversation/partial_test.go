package conversation

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// streaming is a backend whose turn tells its observer each of texts as
// the answer so far, each followed by an activity (as the API backend's
// stream does), then waits for release and answers the last.
type streaming struct {
	texts   []string
	release chan struct{}
	// text says whether the turn's observer heard the answer's text.
	text chan bool
}

func (b *streaming) Name() string          { return "api" }
func (b *streaming) Family() config.Family { return config.FamilyCLI }
func (b *streaming) Close()                {}
func (b *streaming) Run(ctx context.Context, t backend.Turn) (*backend.Answer, error) {
	_, ok := t.Observer.(backend.TextObserver)
	b.text <- ok
	for _, s := range b.texts {
		backend.AnswerSoFar(t.Observer, s)
		if t.Observer != nil {
			t.Observer.Activity("receiving the answer")
		}
	}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &backend.Answer{Text: b.texts[len(b.texts)-1]}, nil
}

// TestBackgroundPartial: a background turn's answer, as the backend
// reports it while it streams, is kept in its job as its output so far
// (its last jobs.MaxPartialTailBytes, the bytes before them counted), and
// the completed job keeps the result alone; a synchronous turn's observer
// is not asked for the answer's text.
func TestBackgroundPartial(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	life, stop := context.WithCancel(context.Background())
	defer stop()
	long := strings.Repeat("é", jobs.MaxPartialTailBytes) // twice the cap, in two-byte runes
	b := &streaming{texts: []string{"The first half", "The first half and more, " + long}, release: make(chan struct{}), text: make(chan bool, 2)}
	d := New(Options{Backend: b, Store: mem, Jobs: jobs.Of(mem), DefaultCwd: t.TempDir(), Lifetime: life})
	res, err := d.Do(context.Background(), Request{Turn: backend.Turn{Prompt: "long"}, Render: rendered, Background: true,
		Call: &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "chat"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !<-b.text {
		t.Fatal("a background turn's observer does not hear the answer's text")
	}
	id, _ := res.Meta["jobId"].(string)
	whole := b.texts[1]
	j := untilJob(t, mem, id, func(j jobs.Job) bool { return j.Partial != "" && strings.HasSuffix(whole, j.Partial) })
	if !j.PartialTail || len(j.Partial) != jobs.MaxPartialTailBytes || j.PartialDropped != len(whole)-len(j.Partial) ||
		j.Status != jobs.Working {
		t.Errorf("the running job keeps %d bytes of output (tail %v), %d dropped, status %s; want the last %d of %d",
			len(j.Partial), j.PartialTail, j.PartialDropped, j.Status, jobs.MaxPartialTailBytes, len(whole))
	}
	close(b.release)
	j = untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status.Final() })
	if j.Status != jobs.Completed || j.Partial != "" || j.PartialTail || j.PartialDropped != 0 {
		t.Errorf("the completed job: %s, partial %q (tail %v, %d dropped)", j.Status, j.Partial, j.PartialTail, j.PartialDropped)
	}

	// A synchronous call asking for progress: no one keeps its text.
	sync := &streaming{texts: []string{"x"}, release: make(chan struct{}), text: make(chan bool, 1)}
	close(sync.release)
	ds := New(Options{Backend: sync, Store: mem, DefaultCwd: t.TempDir()})
	if _, err := ds.Do(context.Background(), Request{Turn: backend.Turn{Prompt: "short"}, Render: rendered}); err != nil {
		t.Fatal(err)
	}
	if <-sync.text {
		t.Error("a synchronous turn's observer hears the answer's text")
	}
}
