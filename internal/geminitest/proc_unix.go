//go:build unix && !linux

package geminitest

import (
	"errors"
	"syscall"
)

// Alive reports whether pid is a process that exists: signal 0 checks
// that without sending anything. Without /proc a zombie (ended, not yet
// reaped by its parent) cannot be told apart, so it counts as running: a
// test waiting for a process to be gone then also checks that its parent
// reaped it.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ProcStat is what /proc/PID/stat says of a process (Linux only).
type ProcStat struct {
	State         string
	Parent, Group int
}

// Running says whether the process runs: it has not ended.
func (st ProcStat) Running() bool { return st.State != "Z" && st.State != "X" }

// Stat is Linux's reading of /proc/PID/stat; here there is none, and ok
// is false.
func Stat(int) (ProcStat, bool) { return ProcStat{}, false }
