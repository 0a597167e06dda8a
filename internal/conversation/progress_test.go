package conversation

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newTestProgress is a reporter whose notifications go to sent, each
// waiting for release first; its ticks never come.
func newTestProgress(t *testing.T) (p *progress, sent chan string, release chan struct{}) {
	t.Helper()
	sent, release = make(chan string, 100), make(chan struct{})
	notify := func(_ context.Context, n *mcp.ProgressNotificationParams) error {
		<-release
		sent <- regexp.MustCompile(` \(\d+s elapsed\)$`).ReplaceAllString(n.Message, "")
		return nil
	}
	p = &progress{ctx: context.Background(), notify: notify, token: "t", start: time.Now(),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop(time.Hour)
	t.Cleanup(func() {
		close(release)
		p.finish()
	})
	return p, sent, release
}

// TestProgressSendsEveryChange: a tool Gemini calls is reported even when
// the states after it come before the reporter could send it (a busy
// machine), and a run of the same kind of state is sent as its newest.
func TestProgressSendsEveryChange(t *testing.T) {
	p, sent, release := newTestProgress(t)
	p.Started()
	// The reporter holds "gemini is running" until release: what follows
	// comes while it is busy.
	p.Activity("calling mcp_down_echo")
	p.Activity("receiving the answer: 0 characters")
	p.Activity("receiving the answer: 155 characters")
	var got []string
	for range 3 {
		release <- struct{}{}
		got = append(got, <-sent)
	}
	want := []string{"gemini is running", "calling mcp_down_echo", "receiving the answer: 155 characters"}
	if !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

// TestProgressPendingBounded: however many changes come while the client
// is slow, at most maxPendingStates wait, the newest last.
func TestProgressPendingBounded(t *testing.T) {
	p, _, _ := newTestProgress(t)
	p.Started()
	for i := range 10 * maxPendingStates {
		p.Activity(fmt.Sprintf("calling tool_%d", i))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.pending); n > maxPendingStates {
		t.Fatalf("%d changes wait, want at most %d", n, maxPendingStates)
	}
	if last := p.pending[len(p.pending)-1]; last != fmt.Sprintf("calling tool_%d", 10*maxPendingStates-1) {
		t.Fatalf("the last change waiting is %q", last)
	}
}

// TestGatherProgress: a Gather's state goes to the call's reporter; outside
// a Gather, or for a client that asked for no progress, nothing happens.
func TestGatherProgress(t *testing.T) {
	GatherProgress(context.Background(), "indexing: 1 of 2 files")
	GatherProgress(context.WithValue(context.Background(), gatherKey{}, (*progress)(nil)), "indexing: 1 of 2 files")
	p, sent, release := newTestProgress(t)
	GatherProgress(context.WithValue(context.Background(), gatherKey{}, p), "indexing: 1 of 2 files")
	release <- struct{}{}
	if got := <-sent; got != "indexing: 1 of 2 files" {
		t.Fatalf("sent %q", got)
	}
}
