//go:build unix

package interop

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// setProcessGroup starts cmd in a process group of its own, so that
// whatever it leaves behind can be found and stopped.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// reapGroup waits up to grace for the process group of cmd (which has
// exited) to empty, then kills what is left. It reports whether anything
// was left.
func reapGroup(cmd *exec.Cmd, grace time.Duration) (leftovers bool) {
	if cmd.Process == nil {
		return false
	}
	pgid := cmd.Process.Pid
	deadline := time.Now().Add(grace)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			syscall.Kill(-pgid, syscall.SIGKILL)
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// alive reports whether a process with this pid exists (a zombie counts:
// nobody reaped it yet).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// interrupt asks a server to shut down as a service manager would.
func interrupt(p *os.Process) { p.Signal(syscall.SIGTERM) }
