//go:build unix

package gemini

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in a process group of its own: the CLI
// re-spawns itself, and stopping a call must reach every process it made.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// interruptGroup asks the child's whole process group to stop (SIGINT, what
// the CLI handles as a user's Ctrl-C).
func interruptGroup(p *os.Process) error {
	return signalGroup(p, syscall.SIGINT)
}

// killGroup ends the child's whole process group at once. It is also called
// after the child has been reaped, to end anything it left behind; the group
// is then usually empty, which is not an error.
func killGroup(p *os.Process) error {
	return signalGroup(p, syscall.SIGKILL)
}

func signalGroup(p *os.Process, sig syscall.Signal) error {
	if p == nil || p.Pid <= 0 {
		return nil
	}
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
