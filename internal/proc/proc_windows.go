//go:build windows

package proc

import (
	"os/exec"
	"syscall"
)

// setGroup starts the child in a new process group, so that console
// interrupts meant for this server do not reach it.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
