package conversation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// progress reports a call's state to a client that asked for progress
// (the request carried a progress token): at once on every change, and
// every interval in between, with the time elapsed. Changes are sent in
// order, each of them (a tool Gemini calls is never hidden by the state
// that follows it before the reporter runs), except that a change of the
// same kind as the one still waiting replaces it ("receiving the answer:
// N characters" as N grows), and at most maxPendingStates wait. A nil
// *progress does nothing, so calls without a token pay nothing.
type progress struct {
	ctx    context.Context
	notify func(context.Context, *mcp.ProgressNotificationParams) error
	token  any
	start  time.Time
	mu     sync.Mutex
	state  string
	// pending are the changes not sent yet, oldest first.
	pending []string
	last    float64
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// startProgress starts reporting for c, if its client asked for progress.
// The caller must call finish.
func (d *Service) startProgress(ctx context.Context, c Call) *progress {
	if c.notify == nil {
		return nil
	}
	interval := d.o.ProgressInterval
	if interval <= 0 {
		interval = config.DefaultProgressInterval
	}
	start := c.start
	if start.IsZero() {
		start = time.Now()
	}
	p := &progress{ctx: ctx, notify: c.notify, token: c.token, start: start, state: "starting",
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop(interval)
	return p
}

func (p *progress) loop(interval time.Duration) {
	defer close(p.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.ctx.Done():
			return
		case <-p.wake:
			for p.sendPending() {
			}
			continue
		case <-t.C:
		}
		p.mu.Lock()
		state := p.state
		p.mu.Unlock()
		p.send(state)
	}
}

// maxPendingStates bounds the changes waiting to be sent: past it, the
// newest replaces the last waiting one.
const maxPendingStates = 32

// sendPending sends the oldest change not sent yet, and says whether
// there was one.
func (p *progress) sendPending() bool {
	p.mu.Lock()
	if len(p.pending) == 0 {
		p.mu.Unlock()
		return false
	}
	state := p.pending[0]
	p.pending = p.pending[1:]
	p.mu.Unlock()
	p.send(state)
	return true
}

// kind is what a state is about: its text before a colon.
func kind(state string) string {
	k, _, _ := strings.Cut(state, ":")
	return k
}

func (p *progress) send(state string) {
	p.mu.Lock()
	elapsed := time.Since(p.start)
	// Progress must increase with every notification.
	v := elapsed.Seconds()
	if v <= p.last {
		v = p.last + 0.001
	}
	p.last = v
	msg := fmt.Sprintf("%s (%ds elapsed)", state, int(elapsed.Seconds()))
	p.mu.Unlock()
	_ = p.notify(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: v, Message: msg})
}

// set changes the state and reports it at once.
func (p *progress) set(state string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.state = state
	switch n := len(p.pending); {
	case n > 0 && (n >= maxPendingStates || kind(p.pending[n-1]) == kind(state)):
		p.pending[n-1] = state
	default:
		p.pending = append(p.pending, state)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// finish stops reporting and waits for the reporter to end.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
}

// Queued, Started and Activity make progress a backend.Observer.
var _ backend.Observer = (*progress)(nil)

func (p *progress) Queued(ahead int) {
	if ahead == 0 {
		p.set("queued: next in line for a free gemini slot")
		return
	}
	p.set(fmt.Sprintf("queued: %d call(s) ahead, waiting for a free gemini slot", ahead))
}

func (p *progress) Started() { p.set("gemini is running") }

// Activity reports what Gemini is doing, where the backend can tell (the
// warm backend can).
func (p *progress) Activity(msg string) { p.set(msg) }

// gatherKey is the context key of the progress of a Request's Gather.
type gatherKey struct{}

// GatherProgress reports state ("indexing: 10 of 200 files") as the
// progress of the call whose Gather, or Material.Prepare, runs under ctx,
// to a client that asked for progress, or to the call's job; a state of
// the same kind as the one still waiting replaces it. Outside them it
// does nothing.
func GatherProgress(ctx context.Context, state string) {
	if p, ok := ctx.Value(gatherKey{}).(*progress); ok {
		p.set(state)
	}
}

// waitingForSession reports a call that waits for an earlier call on the
// same session.
func (p *progress) waitingForSession(session string, ahead int) {
	p.set(fmt.Sprintf("waiting for %d earlier call(s) on session %s to finish", ahead+1, session))
}
