//go:build !unix && !windows

package proc

import "os/exec"

// SetGroup does nothing: these systems have no process groups to set.
func SetGroup(*exec.Cmd) {}
