//go:build windows

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

// SetGroup starts the child in a new process group, so that console
// interrupts meant for this server do not reach it.
func SetGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// InterruptGroup ends the child. Windows has no signal a console-less child
// could handle, so this is a kill.
func InterruptGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}

// KillGroup ends the child. Descendants the CLI started are not reached;
// with GEMINI_CLI_NO_RELAUNCH=true the CLI starts none.
func KillGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	err := p.Kill()
	if err == os.ErrProcessDone {
		return nil
	}
	return err
}

// ExitSignal returns "": Windows has no signals: a killed process has an exit code.
func ExitSignal(*os.ProcessState) string { return "" }
