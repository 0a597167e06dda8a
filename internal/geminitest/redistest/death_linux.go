package redistest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill the server when the test process
// dies, so that a test binary killed by a timeout leaves no Redis behind.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
