//go:build unix

package main

import (
	"os"
	"syscall"
	"time"
)

// processGroup returns the id of the process group the fake runs in, so tests can check that a
// wrapper put the CLI in a group of its own.
func processGroup() int {
	return syscall.Getpgrp()
}

// killSelf ends the process with signal sig, as the system's out-of-memory killer or an operator
// would. A signal the process survives (one it ignores or catches) is followed by exit code 1.
func killSelf(sig int) {
	_ = syscall.Kill(os.Getpid(), syscall.Signal(sig))
	// Delivery to the sending process is prompt but not synchronous.
	time.Sleep(time.Second)
	os.Exit(1)
}
