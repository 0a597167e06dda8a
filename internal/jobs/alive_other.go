//go:build !unix

package jobs

// Alive says whether a process has the id pid: not known here, so every
// id counts as in use, and only a job of this process's own id, run
// before, is orphaned at once.
func Alive(int) bool { return true }
