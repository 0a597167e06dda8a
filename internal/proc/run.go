package proc

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"time"
)

// Spec is a short-lived command to run to completion: a helper program
// such as git, whose output is read whole.
type Spec struct {
	Path  string
	Args  []string
	Dir   string
	Env   []string // nil: this process's environment
	Stdin io.Reader
	// MaxStdout caps what is kept of stdout; past it the child is stopped
	// and Result.Overflow is set. Zero means 16 MiB.
	MaxStdout int
	// StderrTail is how much of the end of stderr is kept; zero means
	// 8 KiB.
	StderrTail int
	// Timeout bounds the run; zero means none beyond ctx.
	Timeout time.Duration
	// KillGrace is how long an interrupted child has before it is killed;
	// zero means 2 s.
	KillGrace time.Duration
}

// Result is how a run ended.
type Result struct {
	Stdout   []byte
	Stderr   string // the kept tail
	Exit     int    // -1 when the child did not exit by itself
	Signal   string
	Overflow bool // stdout passed MaxStdout; the child was stopped
	TimedOut bool // Spec.Timeout ran out
	Elapsed  time.Duration
}

var errOverflow = errors.New("output limit reached")

// ErrTimeout is the cause of a run's context when Spec.Timeout ran out.
var ErrTimeout = errors.New("timed out")

// StartError is a child that could not be started; Err is why
// (ErrNotFound for a missing program, or ctx's error when it had ended
// already).
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Run starts the command in a process group of its own, waits for it and
// everything it started, and returns its output. The error is nil when
// the child ran, whatever its exit status (see Result); it is a
// *StartError when the child could not be started, or the caller's
// context error when ctx ended the run.
func Run(ctx context.Context, s Spec) (Result, error) {
	if s.MaxStdout <= 0 {
		s.MaxStdout = 16 << 20
	}
	if s.StderrTail <= 0 {
		s.StderrTail = 8 << 10
	}
	if s.KillGrace <= 0 {
		s.KillGrace = 2 * time.Second
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if s.Timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, s.Timeout, ErrTimeout)
		defer stop()
	}
	stdout := NewCappedBuffer(s.MaxStdout, func() { cancel(errOverflow) })
	stderr := NewTailBuffer(s.StderrTail)
	cmd := exec.CommandContext(runCtx, s.Path, s.Args...)
	cmd.Dir, cmd.Env, cmd.Stdin = s.Dir, s.Env, s.Stdin
	cmd.Stdout, cmd.Stderr = stdout, stderr
	setGroup(cmd)
	cmd.Cancel = func() error { return interruptGroup(cmd.Process) }
	cmd.WaitDelay = s.KillGrace
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{Exit: -1}, &StartError{Err: err}
	}
	_ = cmd.Wait()
	// Whatever of the group outlived the child goes now.
	_ = killGroup(cmd.Process)
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.String(), Exit: cmd.ProcessState.ExitCode(), Signal: exitSignal(cmd.ProcessState), Elapsed: time.Since(start)}
	switch cause := context.Cause(runCtx); {
	case stdout.Overflowed():
		res.Overflow = true
	case errors.Is(cause, ErrTimeout):
		res.TimedOut = true
	case ctx.Err() != nil:
		return res, ctx.Err()
	}
	return res, nil
}
