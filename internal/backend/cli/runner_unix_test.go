//go:build linux

package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// waitForChild waits until the fake has logged the pid of its [[child]].
func waitForChild(t *testing.T, log string) geminitest.Invocation {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		inv, _ := geminitest.ReadLog(log)
		for _, i := range inv {
			if i.ChildPid != 0 {
				return i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the fake never started its child")
	return geminitest.Invocation{}
}

// killBound is how long stopped processes may take to be gone.
const killBound = 10 * time.Second

// TestCancelKillsProcessGroup cancels a call whose CLI has started a child
// (as the real CLI re-spawns itself) and one that ignores SIGINT and
// SIGTERM: every process must be gone, killed rather than left to its own
// end (the fake's 30 s self-timeout; killBound is a guard under it, not the
// 1.5 s grace, so that a busy machine does not fail the test).
func TestCancelKillsProcessGroup(t *testing.T) {
	for _, prompt := range []string{"[[child]]", "[[ignoreterm]] [[child]]"} {
		t.Run(prompt, func(t *testing.T) {
			r, log := newTestRunner(t, geminicli.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := r.Run(ctx, backend.Turn{Prompt: prompt, Dir: geminitest.WorkDir(t)})
				done <- err
			}()
			inv := waitForChild(t, log)
			if !geminitest.Alive(inv.Pid) || !geminitest.Alive(inv.ChildPid) {
				t.Fatal("processes not running before the cancel")
			}
			start := time.Now()
			cancel()
			var err error
			select {
			case err = <-done:
			case <-time.After(killBound):
				t.Fatal("Run did not return after cancel")
			}
			var e *backend.Error
			if !errors.As(err, &e) || e.Kind != backend.KindCancelled || !errors.Is(err, context.Canceled) || e.Exited {
				t.Fatalf("got %v", err)
			}
			for time.Since(start) < killBound && (geminitest.Alive(inv.Pid) || geminitest.Alive(inv.ChildPid)) {
				time.Sleep(10 * time.Millisecond)
			}
			if geminitest.Alive(inv.Pid) || geminitest.Alive(inv.ChildPid) {
				t.Fatalf("still running %v after cancel: cli %v child %v", killBound, geminitest.Alive(inv.Pid), geminitest.Alive(inv.ChildPid))
			}
		})
	}
}

func TestTimeoutStopsTheCall(t *testing.T) {
	r, log := newTestRunner(t, geminicli.Options{Timeout: 500 * time.Millisecond})
	_, err := r.Run(context.Background(), backend.Turn{Prompt: "[[child]]", Dir: geminitest.WorkDir(t)})
	var e *backend.Error
	if !errors.As(err, &e) || e.Kind != backend.KindTimeout || !strings.Contains(e.Reason, "timed out after 0.5 s") || !errors.Is(err, context.DeadlineExceeded) || e.Exited {
		t.Fatalf("got %v", err)
	}
	inv := waitForChild(t, log)
	deadline := time.Now().Add(killBound)
	for time.Now().Before(deadline) && (geminitest.Alive(inv.Pid) || geminitest.Alive(inv.ChildPid)) {
		time.Sleep(10 * time.Millisecond)
	}
	if geminitest.Alive(inv.Pid) || geminitest.Alive(inv.ChildPid) {
		t.Fatal("processes outlived the timeout")
	}
}

// TestKilledBySignal: a CLI killed by a signal is reported with the
// signal's name, not as an exit code (package acp checks the warm backend
// the same way).
func TestKilledBySignal(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t, geminicli.Options{})
	_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "[[signal:9]]", Dir: geminitest.WorkDir(t)})
	var e *backend.Error
	if !errors.As(err, &e) || e.Kind != backend.KindFailed || !strings.Contains(e.Reason, "killed by signal SIGKILL") || strings.Contains(e.Reason, "-1") || e.Exited {
		t.Errorf("one-shot: %v", err)
	}
}
