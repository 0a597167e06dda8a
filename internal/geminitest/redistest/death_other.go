//go:build !linux

package redistest

import "os/exec"

// setDeathSignal does nothing where the kernel cannot kill a child with its
// parent; the test's cleanup still kills the server.
func setDeathSignal(*exec.Cmd) {}
