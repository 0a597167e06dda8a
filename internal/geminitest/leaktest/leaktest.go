// Package leaktest finds goroutines a test left running: those alive when
// the check runs that neither the testing package, the runtime's signal
// handling nor the caller's exceptions account for. A goroutine on its way
// out is given time to end: the check looks again until none is left, or
// until a deadline, and only then reports what it saw.
//
// It needs nothing beyond the standard library, so that the product's
// module lists no test-only module for it.
package leaktest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// settle is how long a check waits for goroutines on their way out before
// it reports them: generous, as a busy machine may be slow to schedule
// their last steps; a clean run never waits it out. Its own tests shorten it.
var settle = 10 * time.Second

// Option narrows what counts as a leak.
type Option func(*filter)

type filter struct {
	tops []string        // functions a goroutine may be stopped in
	ids  map[string]bool // goroutines alive when IgnoreCurrent was called
}

// IgnoreTopFunction forgives goroutines stopped in the function named (as
// a stack trace spells it, e.g. "go.opencensus.io/stats/view.(*worker).start").
func IgnoreTopFunction(name string) Option {
	return func(f *filter) { f.tops = append(f.tops, name) }
}

// IgnoreCurrent forgives the goroutines alive now.
func IgnoreCurrent() Option {
	alive := map[string]bool{}
	for _, g := range goroutines() {
		alive[g.id] = true
	}
	return func(f *filter) {
		if f.ids == nil {
			f.ids = map[string]bool{}
		}
		for id := range alive {
			f.ids[id] = true
		}
	}
}

// Find returns an error naming the goroutines left running (with their
// stacks), or nil once there are none.
func Find(opts ...Option) error {
	var f filter
	for _, o := range opts {
		o(&f)
	}
	deadline := time.Now().Add(settle)
	wait := time.Millisecond
	for {
		leaked := f.leaks()
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			stacks := make([]string, len(leaked))
			for i, g := range leaked {
				stacks[i] = g.stack
			}
			return fmt.Errorf("leaktest: %d goroutine(s) left running:\n\n%s", len(leaked), strings.Join(stacks, "\n\n"))
		}
		// Polling is what a leak check can do: nothing signals that a
		// goroutine has ended.
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// VerifyNone fails t when goroutines are left running.
func VerifyNone(t testing.TB, opts ...Option) {
	t.Helper()
	if err := Find(opts...); err != nil {
		t.Error(err)
	}
}

// VerifyTestMain runs the package's tests and, when they pass, fails the
// run if they left goroutines running:
//
//	func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }
func VerifyTestMain(m *testing.M, opts ...Option) {
	code := m.Run()
	if code == 0 {
		if err := Find(opts...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// goroutine is one goroutine of a stack dump.
type goroutine struct {
	id    string
	top   string   // the function it is stopped in
	funcs []string // every function of its stack, innermost first
	stack string   // its part of the dump
}

// leaks returns the goroutines alive but the caller's, less those the
// filter and the standard exceptions forgive.
func (f *filter) leaks() []goroutine {
	all := goroutines()
	var out []goroutine
	for _, g := range all[1:] { // the first is the caller's own
		if f.ids[g.id] || f.forgiven(g) {
			continue
		}
		out = append(out, g)
	}
	return out
}

func (f *filter) forgiven(g goroutine) bool {
	for _, top := range f.tops {
		if g.top == top {
			return true
		}
	}
	for _, fn := range g.funcs {
		switch fn {
		case "testing.RunTests", "testing.(*T).Run", "testing.(*M).Run",
			"testing.(*F).Fuzz", "testing.runFuzzing", "testing.runFuzzTests",
			"os/signal.signal_recv", "os/signal.loop", "runtime.ensureSigM",
			"runtime.ReadTrace", "runtime/trace.Start.func1":
			return true
		}
	}
	return false
}

// goroutines parses runtime.Stack's dump of every goroutine; the caller's
// comes first.
func goroutines() []goroutine {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, block := range strings.Split(strings.TrimSpace(string(buf)), "\n\n") {
		lines := strings.Split(block, "\n")
		header, ok := strings.CutPrefix(lines[0], "goroutine ")
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(header, " ")
		g := goroutine{id: id, stack: block}
		// Function lines alternate with their file:line lines; a
		// "created by" line ends the stack.
		for i := 1; i < len(lines); i += 2 {
			line := lines[i]
			if strings.HasPrefix(line, "created by ") {
				break
			}
			if j := strings.LastIndex(line, "("); j > 0 && strings.HasSuffix(line, ")") {
				line = line[:j]
			}
			g.funcs = append(g.funcs, line)
		}
		if len(g.funcs) > 0 {
			g.top = g.funcs[0]
		}
		out = append(out, g)
	}
	return out
}
