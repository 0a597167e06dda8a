package main

import (
	"bufio"
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// started is a fake that is still running, with its stderr readable line by line.
type started struct {
	cmd    *exec.Cmd
	stderr *bufio.Reader
	stdout *bytes.Buffer
}

// start starts the fake without waiting for it.
func (s *sandbox) start(args ...string) *started {
	s.t.Helper()
	cmd := s.command(args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	p := &started{cmd: cmd, stderr: bufio.NewReader(stderr), stdout: &bytes.Buffer{}}
	cmd.Stdout = p.stdout
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		// A test that failed early must not leave the fake running; Wait after Kill is harmless.
		cmd.Process.Kill()
		cmd.Wait()
	})
	return p
}

func TestHangEndsAtTheSelfTimeout(t *testing.T) {
	t.Parallel()
	s := newSandbox(t).with(geminitest.EnvSelfTimeout + "=300ms")
	for _, directive := range []string{"[[hang]]", "[[ignoreterm]]"} {
		start := time.Now()
		r := s.run("-o", "json", directive).mustFail(t, geminitest.ExitSelfTimeout, selfTimeoutLine+" 300ms")
		if elapsed := time.Since(start); elapsed < 300*time.Millisecond {
			t.Errorf("%s ended after %v, before its self-timeout", directive, elapsed)
		}
		if r.stdout != "" {
			t.Errorf("%s printed %q on stdout", directive, r.stdout)
		}
	}
	// The self-timeout also bounds a run that waits for stdin that never ends.
	cmd := s.command("hi")
	if _, err := cmd.StdinPipe(); err != nil { // Held open and never written.
		t.Fatal(err)
	}
	err := cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != geminitest.ExitSelfTimeout {
		t.Errorf("waiting on stdin ended with %v, want exit %d", err, geminitest.ExitSelfTimeout)
	}
}

func TestHangUntilKilled(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.start("-o", "json", "some [[hang]] prompt")
	line := waitForLine(t, p.stderr, hangingLine)
	if !strings.Contains(line, "(pid ") {
		t.Errorf("hanging line %q names no pid", line)
	}
	// The invocation was logged before the fake began to hang.
	if inv := s.lastInvocation(); inv.Prompt != "some [[hang]] prompt" || inv.Pid != p.cmd.Process.Pid {
		t.Errorf("logged %+v", inv)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := p.cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() == 0 || exitErr.ExitCode() == geminitest.ExitSelfTimeout {
		t.Errorf("killed fake ended with %v", err)
	}
	if p.stdout.Len() != 0 {
		t.Errorf("stdout %q", p.stdout)
	}
	if s.run("-r", "latest", "hi").code != 42 {
		t.Error("a hung turn was saved")
	}
}

func TestSleepThenDirectivesCompose(t *testing.T) {
	t.Parallel()
	start := time.Now()
	r := newSandbox(t).run("-o", "json", "[[sleep:200]] [[stderr:10]] [[exit:244]]")
	r.mustFail(t, 244, `"code": 500`)
	// The noise comes first, cut to exactly 10 bytes, then the failure's own stderr.
	if !strings.HasPrefix(r.stderr, "fake-gemin"+colorWarningLine) || time.Since(start) < 200*time.Millisecond {
		t.Errorf("stderr %q after %v", r.stderr, time.Since(start))
	}
}
