//go:build windows

package gemini

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup starts the child in a new process group, so that console
// interrupts meant for this server do not reach it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// interruptGroup ends the child. Windows has no signal a console-less child
// could handle, so this is a kill.
func interruptGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}

// killGroup ends the child. Descendants the CLI started are not reached;
// with GEMINI_CLI_NO_RELAUNCH=true the CLI starts none.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	err := p.Kill()
	if err == os.ErrProcessDone {
		return nil
	}
	return err
}

// exitSignal returns "": Windows has no signals: a killed process has an exit code.
func exitSignal(*os.ProcessState) string { return "" }
