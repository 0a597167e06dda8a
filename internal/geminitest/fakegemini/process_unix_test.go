//go:build unix

package main

import (
	"bufio"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestLoggedProcessGroup(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	s.run("hi").mustSucceed(t)
	if inv := s.lastInvocation(); inv.Pgid != syscall.Getpgrp() {
		t.Errorf("logged pgid %d; a fake started without Setpgid shares this test's group %d", inv.Pgid, syscall.Getpgrp())
	}

	cmd := s.command("hi")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if inv := s.lastInvocation(); inv.Pgid != inv.Pid {
		t.Errorf("logged pgid %d for pid %d started with Setpgid", inv.Pgid, inv.Pid)
	}
}

// TestIgnoreTerm checks that SIGTERM and SIGINT do not end [[ignoreterm]], and that SIGKILL does.
func TestIgnoreTerm(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.start("[[ignoreterm]]")
	waitForLine(t, p.stderr, ignoringLine)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGTERM} {
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatalf("sending %v: %v", sig, err)
		}
		// The fake reports each signal it survived; reading the report proves it still runs.
		waitForLine(t, p.stderr, ignoredLine+" "+sig.String())
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := p.cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("Wait: %v", err)
	}
	if ws := exitErr.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the fake ended with %v, want death by SIGKILL", ws)
	}
}

// TestChildInSameProcessGroup checks [[child]]: the child shares the fake's process group and its
// stdout, so stdout reaches EOF only once the whole group is dead.
func TestChildInSameProcessGroup(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	cmd := s.command("-o", "json", "[[child]]")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	stderr := bufio.NewReader(stderrPipe)

	line := waitForLine(t, stderr, childLine)
	childPid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, childLine)))
	if err != nil {
		t.Fatalf("child line %q: %v", line, err)
	}
	waitForLine(t, stderr, hangingLine)

	invs := s.invocations()
	if len(invs) != 2 || invs[0].ChildPid != 0 || invs[1].ChildPid != childPid || invs[1].Pid != pgid || invs[1].Pgid != pgid {
		t.Fatalf("logged %+v, want a line without and a line with child pid %d, both from pid and group %d", invs, childPid, pgid)
	}
	if got, err := syscall.Getpgid(childPid); err != nil || got != pgid {
		t.Fatalf("child %d is in group %d (%v), want %d", childPid, got, err, pgid)
	}

	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// EOF on stdout means every holder of its write end, the child included, is gone.
	if rest, err := io.ReadAll(stdout); err != nil || len(rest) != 0 {
		t.Errorf("stdout %q, %v", rest, err)
	}
	if _, err := io.ReadAll(stderr); err != nil {
		t.Error(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the killed fake exited cleanly")
	}
}
