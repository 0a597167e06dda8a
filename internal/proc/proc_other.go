//go:build !unix && !windows

package proc

import "os/exec"

// setGroup does nothing: these systems have no process groups to set.
func setGroup(*exec.Cmd) {}
