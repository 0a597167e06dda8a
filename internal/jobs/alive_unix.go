//go:build unix

package jobs

import (
	"errors"
	"syscall"
)

// Alive says whether a process has the id pid on this node: a signal 0
// to it finds it, or finds it another user's.
func Alive(pid int) bool {
	if pid <= 0 {
		return true // not a process's id: nothing is known of it
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
