package proc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Program is a long-lived child to start: a server this process talks to
// over the child's stdin and stdout for as long as it runs (the warm
// Gemini CLI, the MCP host's stdio servers).
type Program struct {
	Path string
	Args []string
	Dir  string
	Env  []string // nil: this process's environment
	// Stderr receives what the child and its group write on stderr,
	// copied by a goroutine of Start's; nil discards it.
	Stderr io.Writer
}

// stderrDrain is how long the copy of a child's stderr may run on after
// the child has exited and its group has been killed: only a process that
// left the group can still hold the pipe open then.
const stderrDrain = 2 * time.Second

// Child is a running Program. Its pipes are plain OS pipes, so that
// waiting for the child never depends on a grandchild closing one.
type Child struct {
	// Process is the child; its Pid names it in logs. Signal it through
	// Interrupt and Kill, which reach its whole group.
	Process *os.Process
	// Stdin is the child's stdin; closing it is the child's end of input.
	Stdin io.WriteCloser
	// Stdout is the child's stdout. Read it to its end before Wait, which
	// closes it.
	Stdout io.ReadCloser

	stderr     *os.File // read end, nil when stderr is discarded
	stderrDone chan struct{}
	exited     chan struct{}
	exit       Exit // set before exited is closed
	closeOnce  sync.Once
}

// Exit is how a child ended.
type Exit struct {
	Code   int    // its exit code; -1 when it did not exit by itself
	Signal string // the signal that ended it ("SIGKILL"), or ""
	Err    error  // the wait's error, when the child's end is not known otherwise
}

// String says how the child ended: "killed by signal SIGKILL", "exit code
// 3", or the wait's error.
func (e Exit) String() string {
	switch {
	case e.Signal != "":
		return "killed by signal " + e.Signal
	case e.Code >= 0:
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return fmt.Sprint(e.Err)
}

// Start starts the program in a process group of its own, with its stdin
// and stdout on pipes. The child runs until it exits or is stopped (Stop,
// or Kill then Wait); it is reaped by a goroutine of Start's, and whatever
// of its group outlives it is killed at once. The error is the start
// failure (ErrNotFound for a missing program).
func Start(p Program) (*Child, error) {
	var files []*os.File // every end made here, closed on failure
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Dir, cmd.Env = p.Dir, p.Env
	cmd.Stdin, cmd.Stdout = inR, outW
	var errR, errW *os.File
	if p.Stderr != nil {
		if errR, errW, err = pipe(); err != nil {
			closeAll()
			return nil, err
		}
		cmd.Stderr = errW
	}
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	// The child's ends are the child's now.
	inR.Close()
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	c := &Child{Process: cmd.Process, Stdin: inW, Stdout: outR, stderr: errR, stderrDone: make(chan struct{}), exited: make(chan struct{})}
	if errR != nil {
		go func() {
			defer close(c.stderrDone)
			// A writer's failure must not block the child on a full pipe.
			if _, err := io.Copy(p.Stderr, errR); err != nil {
				_, _ = io.Copy(io.Discard, errR)
			}
		}()
	} else {
		close(c.stderrDone)
	}
	go func() {
		err := cmd.Wait()
		// Whatever of the group outlived the child goes with it.
		_ = killGroup(cmd.Process)
		c.exit = Exit{Code: cmd.ProcessState.ExitCode(), Signal: exitSignal(cmd.ProcessState), Err: err}
		close(c.exited)
	}()
	return c, nil
}

// Exited is closed once the child has exited, been reaped, and the rest
// of its group killed.
func (c *Child) Exited() <-chan struct{} { return c.exited }

func (c *Child) reaped() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// Interrupt asks the child's whole process group to stop (SIGINT, what
// the Gemini CLI handles as a user's Ctrl-C; a kill where there are no
// signals). Once the child has been reaped it does nothing: its pid may
// belong to another process by then.
func (c *Child) Interrupt() error {
	if c.reaped() {
		return nil
	}
	return interruptGroup(c.Process)
}

// Kill ends the child's whole process group at once. Once the child has
// been reaped it does nothing: its group was killed then.
func (c *Child) Kill() error {
	if c.reaped() {
		return nil
	}
	return killGroup(c.Process)
}

// Wait waits until the child has exited and its stderr has been copied,
// closes this process's ends of its pipes, and says how it ended. It may
// be called more than once, from any goroutine.
func (c *Child) Wait() Exit {
	<-c.exited
	if c.stderr != nil {
		timer := time.NewTimer(stderrDrain)
		select {
		case <-c.stderrDone:
		case <-timer.C:
			// A process that left the group still holds the pipe: stop
			// copying from it.
		}
		timer.Stop()
	}
	c.closeOnce.Do(func() {
		c.Stdin.Close()
		c.Stdout.Close()
		if c.stderr != nil {
			c.stderr.Close()
		}
	})
	<-c.stderrDone
	return c.exit
}

// Stop ends the child and waits for it: its stdin is closed, and it has
// afterEOF to exit by itself; then its group is interrupted, and has
// afterInterrupt; then it is killed.
func (c *Child) Stop(afterEOF, afterInterrupt time.Duration) Exit {
	c.Stdin.Close()
	if !c.waitFor(afterEOF) {
		_ = c.Interrupt()
		if !c.waitFor(afterInterrupt) {
			_ = c.Kill()
		}
	}
	return c.Wait()
}

// waitFor waits up to d for the child to exit, and says whether it did.
func (c *Child) waitFor(d time.Duration) bool {
	if d <= 0 {
		return c.reaped()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-c.exited:
		return true
	case <-timer.C:
		return false
	}
}

// ErrNotFound is the error of a program that was not found.
var ErrNotFound = exec.ErrNotFound

// LookPath finds the program name as the shell would: a bare name in
// PATH, a name with a separator as the path it is.
func LookPath(name string) (string, error) { return exec.LookPath(name) }
