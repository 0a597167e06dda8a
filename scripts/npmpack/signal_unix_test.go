//go:build unix

package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// The launcher's signals, on systems that have them.

// TestLauncherForwardsSIGTERM: SIGTERM to the launcher reaches the
// binary, which stops cleanly although its stdin is still open, and the
// launcher ends with its exit code.
func TestLauncherForwardsSIGTERM(t *testing.T) {
	t.Parallel()
	p := geminitest.PackedNPM(t)
	x := geminitest.InstallNPM(t, p, "--offline", p.Launcher, p.Platform)
	cmd, log := launcher(t, x)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if err != nil || !strings.Contains(log.String(), "server stopping") {
		t.Fatalf("after SIGTERM: %v, want exit 0 after the server stopped\n%s", err, log.String())
	}
}

// TestLauncherDiesOfBinarysSignal: a binary killed by a signal makes the
// launcher die of the same signal.
func TestLauncherDiesOfBinarysSignal(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("finds the binary's process through /proc")
	}
	p := geminitest.PackedNPM(t)
	x := geminitest.InstallNPM(t, p, "--offline", p.Launcher, p.Platform)
	cmd, log := launcher(t, x)
	pid := cmd.Process.Pid
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(pid), "children"))
	if err != nil {
		t.Fatal(err)
	}
	kids := strings.Fields(string(b))
	if len(kids) != 1 {
		t.Fatalf("the launcher has children %q, want the binary alone", kids)
	}
	child, _ := strconv.Atoi(kids[0])
	if exe, _ := os.Readlink(filepath.Join("/proc", kids[0], "exe")); !strings.HasSuffix(exe, filepath.Join(p.PlatformName, "bin", binaryName)) {
		t.Fatalf("the launcher's child runs %s, not the platform package's binary", exe)
	}
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the launcher of a binary killed by SIGKILL ended with %v, want death by SIGKILL\n%s", err, log.String())
	}
}
