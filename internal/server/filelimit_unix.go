//go:build unix

package server

import "syscall"

// fileLimit returns the process's open-file limit (its soft limit, which
// the Go runtime raises to the hard one at start), or 0 if unknown.
func fileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}
