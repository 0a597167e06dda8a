package proc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// sh starts script under sh, its stderr into a tail buffer.
func sh(t *testing.T, script string) (*Child, *TailBuffer) {
	t.Helper()
	stderr := NewTailBuffer(1 << 10)
	c, err := Start(Program{Path: "/bin/sh", Args: []string{"-c", script}, Stderr: stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(0, 0) })
	return c, stderr
}

// holder makes a FIFO for a script's grandchild to hold open for
// writing: opened is closed once it does, gone once every process that
// held it has exited (the end of the FIFO), which is how the test learns
// that the grandchild is gone without polling for it.
func holder(t *testing.T) (fifo string, opened, gone <-chan struct{}) {
	t.Helper()
	fifo = t.TempDir() + "/hold"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	o, g := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(g)
		f, err := os.Open(fifo) // until a writer opens it
		close(o)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(io.Discard, f)
	}()
	t.Cleanup(func() {
		select {
		case <-o:
		default:
			// The script never opened it: open it here, to end the wait.
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
		}
		<-g
	})
	return fifo, o, g
}

// waitGone waits for the end of a holder's FIFO; the limit is there only so
// that a failure is reported rather than left to hang the test run.
func waitGone(t *testing.T, gone <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(time.Minute):
		t.Fatalf("%s is still running", what)
	}
}

// TestStartPipes: what is written to the child's stdin comes back on its
// stdout, its stderr reaches the writer, and its exit code is reported;
// no pipe's end is left open in this process.
func TestStartPipes(t *testing.T) {
	before := openFDs(t)
	c, stderr := sh(t, "cat; echo oops >&2; exit 3")
	if _, err := io.WriteString(c.Stdin, "hello\n"); err != nil {
		t.Fatal(err)
	}
	c.Stdin.Close()
	out, err := io.ReadAll(c.Stdout)
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("stdout %q, %v", out, err)
	}
	ex := c.Wait()
	if ex.Code != 3 || ex.Signal != "" || ex.String() != "exit code 3" {
		t.Fatalf("exit %+v %q", ex, ex)
	}
	if got := strings.TrimSpace(stderr.String()); got != "oops" {
		t.Fatalf("stderr %q", got)
	}
	if again := c.Wait(); again != ex {
		t.Fatalf("a second Wait: %+v", again)
	}
	if n := openFDs(t); n != before {
		t.Fatalf("%d file descriptors open before, %d after", before, n)
	}
}

// TestStartMissing: a program that is not there is ErrNotFound, and
// leaves no pipe open.
func TestStartMissing(t *testing.T) {
	before := openFDs(t)
	if _, err := Start(Program{Path: "gemini-mcp-no-such-program"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("got %v", err)
	}
	if _, err := Start(Program{Path: "/nonexistent/program", Stderr: io.Discard}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
	if n := openFDs(t); n != before {
		t.Fatalf("%d file descriptors open before, %d after", before, n)
	}
}

// TestStartReapKillsGroup: a child that exits by itself takes the rest
// of its process group with it, so that a grandchild holding its stdout
// neither outlives it nor keeps the reader waiting.
func TestStartReapKillsGroup(t *testing.T) {
	fifo, opened, gone := holder(t)
	c, _ := sh(t, "sleep 600 >"+fifo+" & read line; exit 5")
	<-opened
	if _, err := io.WriteString(c.Stdin, "exit now\n"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gone, "the grandchild")
	// Its stdout's end came with it.
	if _, err := io.ReadAll(c.Stdout); err != nil {
		t.Fatal(err)
	}
	if ex := c.Wait(); ex.Code != 5 {
		t.Fatalf("exit %+v", ex)
	}
}

// TestStopSteps: Stop's three steps, each taken only when the one before
// did not end the child: the end of stdin, an interrupt, a kill of the
// whole group (a grandchild that ignores both signals included).
func TestStopSteps(t *testing.T) {
	t.Run("eof", func(t *testing.T) {
		c, _ := sh(t, "cat >/dev/null; exit 4")
		// The minute is never waited out: the end of stdin ends cat.
		if ex := c.Stop(time.Minute, 0); ex.Code != 4 {
			t.Fatalf("exit %+v", ex)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		c, _ := sh(t, "trap 'exit 7' INT; echo ready; while :; do sleep 1; done")
		if _, err := bufio.NewReader(c.Stdout).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		if ex := c.Stop(0, time.Minute); ex.Code != 7 {
			t.Fatalf("exit %+v", ex)
		}
	})
	t.Run("kill", func(t *testing.T) {
		fifo, opened, gone := holder(t)
		c, _ := sh(t, "trap '' INT TERM; sleep 600 >"+fifo+" & wait")
		<-opened
		ex := c.Stop(0, 0)
		if ex.Signal != "SIGKILL" || ex.Code != -1 || ex.String() != "killed by signal SIGKILL" {
			t.Fatalf("exit %+v %q", ex, ex)
		}
		waitGone(t, gone, "the grandchild, which ignores SIGINT,")
		if err := c.Kill(); err != nil {
			t.Fatalf("Kill after the end: %v", err)
		}
		if err := c.Interrupt(); err != nil {
			t.Fatalf("Interrupt after the end: %v", err)
		}
	})
}

// TestRunCancelKillsGroup: cancelling a run interrupts the child's group,
// then kills it when it does not stop; nothing it started outlives Run.
func TestRunCancelKillsGroup(t *testing.T) {
	fifo, opened, gone := holder(t)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-opened
		cancel()
	}()
	script := "trap '' INT TERM; sleep 600 >" + fifo + " & wait"
	res, err := Run(ctx, Spec{Path: "/bin/sh", Args: []string{"-c", script}, KillGrace: 50 * time.Millisecond})
	if !errors.Is(err, context.Canceled) || res.Signal != "SIGKILL" {
		t.Fatalf("got %+v, %v", res, err)
	}
	waitGone(t, gone, "the grandchild, which ignores SIGINT,")
}

// TestRunCaps: stdout is cut at MaxStdout (the child stopped), stderr is
// kept to its last StderrTail bytes.
func TestRunCaps(t *testing.T) {
	res, err := Run(t.Context(), Spec{Path: "/bin/sh", Args: []string{"-c", "i=0; while [ $i -lt 2000 ]; do echo line$i >&2; i=$((i+1)); done; echo done >&2"}, StderrTail: 100})
	if err != nil || len(res.Stderr) != 100 || !strings.HasSuffix(res.Stderr, "line1999\ndone\n") {
		t.Fatalf("stderr %q, %v", res.Stderr, err)
	}
	res, err = Run(t.Context(), Spec{Path: "/bin/sh", Args: []string{"-c", "while :; do echo 0123456789; done"}, MaxStdout: 4096})
	if err != nil || !res.Overflow || len(res.Stdout) != 4096 || res.Exit == 0 {
		t.Fatalf("stdout: overflow %v, %d bytes, exit %d, %v", res.Overflow, len(res.Stdout), res.Exit, err)
	}
}
