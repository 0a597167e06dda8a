package conversation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// A synchronous call still running at the operator's limit
// (Options.JobAfter, --job-after) is handed over to a job: the call
// answers with the result a background call answers with, and the same
// turn, not a new one, goes on as the job, which keeps its progress and,
// at its end, its result. Only a tool whose result a job can hold hands
// over (Request.Finish set: codereview and precommit, whose output schema
// a result naming a job would not conform to, never do), and not a turn
// whose client is asked through the result (protocol 2026-07-28), which
// has its own way of outliving the call.
//
// The turn runs on a context of its own, which follows the call's until
// the hand-over (the call's end, its HTTP request's or the server's stops
// the turn at once, as for any call) and then the job's: the server's end
// and the job's cancel, from any replica. Its progress goes to the client
// (when it asked for it) until the hand-over, then to the job; from then
// on it cannot ask the client's user to confirm a downstream tool.

// handover is a turn that may be handed over to a job.
type handover struct {
	who    identity.Who
	tool   string
	finish func(*mcp.CallToolResult, error) (*mcp.CallToolResult, error)
	// mu guards notify, where the turn's progress goes (the client's
	// notifier, nil when it asked for none; the job's once handed
	// over), last, the latest progress, which the job gets at once, and
	// gone, set at the hand-over; a notification in flight holds it, so
	// that none reaches the client after its result.
	mu     sync.Mutex
	notify func(context.Context, *mcp.ProgressNotificationParams) error
	last   *mcp.ProgressNotificationParams
	gone   bool
}

// errHandedOver is why a handed-over turn cannot ask the client's user.
var errHandedOver = errors.New("the call went on as a background job past the server's --job-after limit, and its client cannot be asked any more")

// handover returns the handover of r, run for c, when r may be handed
// over, else nil.
func (s *Service) handover(r Request, c Call) *handover {
	if s.o.JobAfter <= 0 || s.o.Jobs == nil || r.Finish == nil {
		return nil
	}
	return &handover{who: c.Who, tool: toolOf(r), finish: r.Finish, notify: c.notify}
}

// send is the turn's progress notifier.
func (h *handover) send(ctx context.Context, p *mcp.ProgressNotificationParams) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = p
	if h.notify == nil {
		return nil
	}
	return h.notify(ctx, p)
}

// ask is ask, until the hand-over; after it the client is gone and
// nothing can be asked of its user.
func (h *handover) ask(ask Asker) Asker {
	return func(ctx context.Context, id string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		h.mu.Lock()
		gone := h.gone
		h.mu.Unlock()
		if gone {
			return nil, errHandedOver
		}
		return ask(ctx, id, p)
	}
}

// to sends the turn's progress to the job's notifier from now on, the
// latest at once (on ctx).
func (h *handover) to(ctx context.Context, notify func(context.Context, *mcp.ProgressNotificationParams) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notify, h.gone = notify, true
	if h.last != nil {
		_ = notify(ctx, h.last)
	}
}

// handOver runs the turn call with turn on ctx, the call's (bound: see
// bind), and returns its result, unless it runs past Options.JobAfter:
// then it hands the turn over to a job of h and returns the result naming
// it. When no job can be made (the caller's limit of jobs, the store),
// the call goes on as it was.
func (s *Service) handOver(ctx context.Context, h *handover, call backend.Turn, turn turnFunc, ask Asker) (*mcp.CallToolResult, error) {
	tctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	follow := func() func() bool { return context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) }) }
	stop := follow()
	done := make(chan outcome, 1)
	go func() {
		res, err := turn(tctx, call, ask)
		done <- outcome{res: res, err: err}
	}()
	asCall := func() (*mcp.CallToolResult, error) {
		o := <-done
		stop()
		cancel(nil)
		return o.res, o.err
	}
	limit := time.NewTimer(s.o.JobAfter)
	defer limit.Stop()
	select {
	case o := <-done:
		done <- o
		return asCall()
	case <-limit.C:
	}
	select {
	case o := <-done:
		// It ended as the limit passed.
		done <- o
		return asCall()
	default:
	}
	if !stop() {
		// The call ended as the limit passed: the turn is stopping.
		return asCall()
	}
	j, err := s.newJob(ctx, h.who, h.tool)
	if err == nil {
		created := j
		if j, err = s.startJob(ctx, j); err != nil {
			_, _ = jobs.Cancel(context.WithoutCancel(ctx), s.o.Jobs, created.Owner, created.ID, s.o.Now())
		}
	}
	if err != nil {
		s.o.Log.Warn("a call past --job-after could not go on as a job: it goes on as a call", "tool", h.tool, "err", err)
		stop = follow()
		return asCall()
	}
	// From here on the job's: the server's end or the job's cancel stops
	// the turn, and its end is the job's.
	life := func() bool { return false }
	if s.o.Lifetime != nil {
		life = context.AfterFunc(s.o.Lifetime, func() { cancel(errors.New(errServerStopped)) })
	}
	h.to(tctx, (&jobReporter{s: s, owner: j.Owner, id: j.ID}).notify)
	go func() {
		defer life()
		defer cancel(nil)
		s.followJob(tctx, cancel, j, func(context.Context, jobs.Job) (*mcp.CallToolResult, error) {
			o := <-done
			return h.finish(o.res, o.err)
		})
	}()
	s.o.Log.Info("a call past --job-after goes on as a background job", "job", j.ID, "tool", j.Tool, "after", s.o.JobAfter)
	return handedOver(j, s.o.JobAfter), nil
}

// handedOver is the result of a call handed over to job j past the
// limit after: a background call's (StartedJob), saying why.
func handedOver(j jobs.Job, after time.Duration) *mcp.CallToolResult {
	res := StartedJob(j)
	t := res.Content[0].(*mcp.TextContent)
	t.Text = fmt.Sprintf("This call ran past this server's limit of %s for a call (--job-after), so it goes on as a background job. %s", after, t.Text)
	return res
}
