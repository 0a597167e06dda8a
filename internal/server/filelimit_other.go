//go:build !unix

package server

// fileLimit returns 0: this system has no per-process open-file limit of
// the Unix kind.
func fileLimit() int { return 0 }
