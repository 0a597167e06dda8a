package acp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// Where a new chat goes when the pool has several processes and spares,
// and how the spares are made (helpers in pool_test.go and
// pool_spare_test.go).

// readySpares returns the ids of p's spares ready for dir.
func readySpares(p *acpProc, dir string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, s := range p.spares {
		select {
		case <-s.ready:
			if s.err == nil && s.dir == dir {
				ids = append(ids, s.id)
			}
		default:
		}
	}
	slices.Sort(ids)
	return ids
}

// settled waits until no process of pl makes a spare, none asks for one
// (every spare made asks for the next: see fill), and every process holds
// want spares ready for dir.
func settled(t *testing.T, pl *pool, dir string, want int) {
	t.Helper()
	err := geminitest.Poll(geminitest.Context(t), fmt.Sprintf("%d spares ready in each process", want), func() (bool, error) {
		pl.mu.Lock()
		procs := append([]*acpProc(nil), pl.procs...)
		pl.mu.Unlock()
		for _, p := range procs {
			p.mu.Lock()
			ready, making := p.spareState(dir)
			p.mu.Unlock()
			if making || ready != want {
				return false, fmt.Errorf("process %d: %d ready, making %v", p.pid(), ready, making)
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWarmSparesUpToTheirNumber: an idle process makes its spares for a
// folder one after the other up to WarmOptions.Spares, and chats in a row
// use them without a session/new of their own.
func TestWarmSparesUpToTheirNumber(t *testing.T) {
	r, _, acpLog := newWarmRunner(t, geminicli.Options{}, WarmOptions{Processes: 1, Spares: 3})
	p, dir := firstChat(t, r)
	settled(t, poolOf(r), dir, 3)
	spares := readySpares(p, dir)
	news := countMethod(t, acpLog, "session/new")
	var got []string
	for i := range 3 {
		res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: fmt.Sprint("burst ", i), Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.SessionID)
	}
	slices.Sort(got)
	if !slices.Equal(got, spares) {
		t.Fatalf("the chats' sessions %v, the spares %v", got, spares)
	}
	// The next spares, and nothing else, asked for sessions since.
	settled(t, poolOf(r), dir, 3)
	if n := countMethod(t, acpLog, "session/new") - news; n != 3 {
		t.Fatalf("%d session/new after three chats on spares, want 3 (the new spares)", n)
	}
}

// TestWarmNewChatGoesWhereASpareIsReady: a chat that finds its process
// busy with no spare ready starts a second process; a new chat then goes
// to the process whose spare is ready and that makes none (its answer
// does not wait for a session/new), and a spare is made in one process
// at a time.
func TestWarmNewChatGoesWhereASpareIsReady(t *testing.T) {
	r, log, acpLog, logs := newWarmRunnerLogged(t, geminicli.Options{}, WarmOptions{Processes: 2, Spares: 1})
	pl := poolOf(r)
	dir, other := geminitest.WorkDir(t), geminitest.WorkDir(t)
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "first", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	a := onlyProc(t, r)
	// A long call holds the process; the next chat finds it busy, with
	// no spare ready (the long call took it).
	ctx, cancel := context.WithCancel(geminitest.Context(t))
	defer cancel()
	held := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, backend.Turn{Prompt: "[[hang]]", Dir: dir})
		held <- err
	}()
	if err := geminitest.Poll(geminitest.Context(t), "the long prompt", func() (bool, error) {
		return strings.Contains(promptsText(t, acpLog), "[[hang]]"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "busy", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if !logs.WaitFor(geminitest.Context(t), `"msg":"another warm gemini process started`) {
		t.Fatal("no second process started")
	}
	cancel()
	<-held
	settled(t, pl, dir, 1)
	if started, _ := acpStarts(t, log); len(started) != 2 {
		t.Fatalf("%d processes started, want 2", len(started))
	}
	pl.mu.Lock()
	b := pl.procs[1]
	if b == a {
		b = pl.procs[0]
	}
	pl.mu.Unlock()

	// a makes a spare (the test stands in for it): the chat goes to b,
	// whose spare is ready.
	pending := &spare{dir: other, ready: make(chan struct{})}
	var once sync.Once
	release := func() {
		once.Do(func() {
			a.mu.Lock()
			delete(a.spares, other)
			a.mu.Unlock()
			pending.err = errCreating
			close(pending.ready)
		})
	}
	// Before Close, which waits for every spare being made.
	t.Cleanup(release)
	a.mu.Lock()
	a.spares[other] = pending
	a.mu.Unlock()
	want := readySpares(b, dir)
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "routed", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 1 || res.SessionID != want[0] {
		t.Fatalf("the chat used session %s; the spare ready in the process making none is %v", res.SessionID, want)
	}
	// While a makes one, no other process starts one: b, idle with none
	// ready, gets none until a's is made.
	pl.topUp("", dir)
	n := spareFolders(b)
	if n != 0 {
		t.Fatalf("a spare started in one process while another made one (%d)", n)
	}
	release()
	pl.topUp("", dir)
	settled(t, pl, dir, 1)
	if got := readySpares(b, dir); len(got) != 1 || got[0] == res.SessionID {
		t.Fatalf("b's spares after a's was made: %v", got)
	}
}
