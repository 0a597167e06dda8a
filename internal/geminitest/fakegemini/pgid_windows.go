package main

import "os"

// processGroup returns 0: Windows has no process groups in the Unix sense.
func processGroup() int {
	return 0
}

// killSelf exits with code 1: Windows has no signals to end a process with.
func killSelf(int) {
	os.Exit(1)
}
