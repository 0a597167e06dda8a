package conversation

import (
	"context"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// instant answers each turn at once, in a new session.
type instant struct{}

func (instant) Name() string          { return "oneshot" }
func (instant) Family() config.Family { return config.FamilyCLI }
func (instant) Close()                {}
func (instant) Run(context.Context, backend.Turn) (*backend.Answer, error) {
	return &backend.Answer{SessionID: session.NewUUID(), Text: "the answer"}, nil
}

// BenchmarkJobAfter is the cost of --job-after on a synchronous call that
// ends before it: the whole of Do for a new chat on a backend that
// answers at once, on the memory store, without the limit and with a
// limit of an hour, which runs the turn on a goroutine and a context of
// its own and waits for it beside a timer. The difference is what the
// limit adds to every call that does not reach it.
func BenchmarkJobAfter(b *testing.B) {
	for _, mode := range []struct {
		name  string
		after time.Duration
	}{{"off", 0}, {"not-reached", time.Hour}} {
		b.Run(mode.name, func(b *testing.B) {
			mem := memstore.New(session.Options{})
			b.Cleanup(func() { _ = mem.Close() })
			d := New(Options{Backend: instant{}, Store: mem, Jobs: jobs.Of(mem), DefaultCwd: b.TempDir(), JobAfter: mode.after})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := d.Do(ctx, handoverRequest("the question"))
				if err != nil || res.Meta["jobId"] != nil {
					b.Fatal(res, err)
				}
			}
		})
	}
}
