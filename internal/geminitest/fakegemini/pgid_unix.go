//go:build unix

package main

import "syscall"

// processGroup returns the id of the process group the fake runs in, so tests can check that a
// wrapper put the CLI in a group of its own.
func processGroup() int {
	return syscall.Getpgrp()
}
