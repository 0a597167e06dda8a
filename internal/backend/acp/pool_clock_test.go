package acp

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// The pool reads time through one clock: these tests move it by hand.

// fakeClock is a clock moved by the test: Advance moves its time, Tick
// delivers a tick to every ticker.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[*fakeTicker]bool
}

type fakeTicker struct {
	c       chan time.Time
	stopped chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Now(), tickers: map[*fakeTicker]bool{}}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	tk := &fakeTicker{c: make(chan time.Time), stopped: make(chan struct{})}
	c.mu.Lock()
	c.tickers[tk] = true
	c.mu.Unlock()
	return tk.c, sync.OnceFunc(func() {
		c.mu.Lock()
		delete(c.tickers, tk)
		c.mu.Unlock()
		close(tk.stopped)
	})
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Tick delivers a tick to every ticker, and returns once each has been
// received (or stopped). Its tickers are unbuffered: a second Tick returns
// only once the first one's work is done.
func (c *fakeClock) Tick() {
	c.mu.Lock()
	var tks []*fakeTicker
	for tk := range c.tickers {
		tks = append(tks, tk)
	}
	now := c.now
	c.mu.Unlock()
	for _, tk := range tks {
		select {
		case tk.c <- now:
		case <-tk.stopped:
		}
	}
}

// TestWarmStartRetryFollowsThePoolClock: after a failed start the pool
// runs calls one-shot for startRetry of its clock's time, then tries
// again.
func TestWarmStartRetryFollowsThePoolClock(t *testing.T) {
	r, log, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{})
	pl := poolOf(r)
	clk := newFakeClock()
	pl.clock = clk
	var starts atomic.Int32
	start := pl.startProc
	pl.startProc = func(ctx context.Context, cmd geminicli.Command, key, sys string) (*acpProc, error) {
		if starts.Add(1) == 1 {
			return nil, errors.New("the first start fails")
		}
		return start(ctx, cmd, key, sys)
	}
	dir := geminitest.WorkDir(t)
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "while starts pause", Dir: dir})
	if err != nil || res.Via == "warm" {
		t.Fatalf("after a failed start: %v, served %q, want one-shot", err, res.Via)
	}
	clk.Advance(startRetry)
	res, err = r.Run(geminitest.Context(t), backend.Turn{Prompt: "once the pause is over", Dir: dir})
	if err != nil || res.Via != "warm" {
		t.Fatalf("%v after the pool's clock passed the retry pause: %v, served %q, want warm", startRetry, err, res.Via)
	}
	if warm, _ := acpStarts(t, log); len(warm) != 1 || starts.Load() != 2 {
		t.Fatalf("%d warm processes, %d starts", len(warm), starts.Load())
	}
}

// TestWarmIdleProcessStops: a process that served nothing for IdleTimeout
// of the pool's clock stops at the next tick, not before.
func TestWarmIdleProcessStops(t *testing.T) {
	r, log, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{SpareAge: -1})
	clk := newFakeClock()
	poolOf(r).clock = clk
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "one", Dir: geminitest.WorkDir(t)}); err != nil {
		t.Fatal(err)
	}
	p := onlyProc(t, r)
	clk.Advance(config.DefaultWarmIdleTimeout - time.Second)
	clk.Tick()
	clk.Tick() // the first tick's check is done
	if p.isDraining() || !p.alive() {
		t.Fatal("a process was stopped before its idle timeout")
	}
	clk.Advance(time.Second)
	clk.Tick()
	select {
	case <-p.exited():
	case <-geminitest.Context(t).Done():
		t.Fatal("an idle process was kept past the idle timeout")
	}
	if started, _ := acpStarts(t, log); len(started) != 1 || geminitest.Alive(started[0].Pid) {
		t.Fatalf("processes %+v", started)
	}
}

// TestPoolReadsTimeOnlyThroughItsClock: no file of the pool reads the
// system's time or waits on its ticks but through the clock. The files of
// one process's protocol (acp.go, turn.go, updates.go) bound another
// process's answer in the system's time, as clock says, and are left out.
func TestPoolReadsTimeOnlyThroughItsClock(t *testing.T) {
	protocol := map[string]bool{"acp.go": true, "turn.go": true, "updates.go": true, "clock.go": true}
	banned := map[string]bool{"Now": true, "Since": true, "Until": true, "NewTicker": true, "Tick": true, "NewTimer": true, "After": true, "AfterFunc": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || protocol[name] {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" && banned[sel.Sel.Name] {
					t.Errorf("%s: time.%s: the pool's time comes from its clock", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no file checked")
	}
}
