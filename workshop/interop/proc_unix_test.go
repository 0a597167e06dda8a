//go:build unix

package interop

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// setProcessGroup starts cmd in a process group of its own, so that
// whatever it leaves behind can be found and stopped.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// leftoverBound is how long a process group may take to empty after its
// leader exited. The wait ends as soon as nothing in the group runs, so
// the bound costs a passing run nothing.
const leftoverBound = 10 * time.Second

// reapGroup waits up to grace for the process group of cmd (which has
// exited) to stop running, then kills what is left. It names what was
// left (pid and command line), or returns "" if nothing ran on.
//
// A member that has exited but was orphaned stays a zombie until pid 1
// reaps it, which some machines' init does only every few seconds (the
// one-shot child an MCP client leaves to exit on its own after it quits
// ends so): a zombie runs nothing and does not count.
func reapGroup(cmd *exec.Cmd, grace time.Duration) (leftovers string) {
	if cmd.Process == nil {
		return ""
	}
	pgid := cmd.Process.Pid
	deadline := time.Now().Add(grace)
	for groupRunning(pgid) {
		if time.Now().After(deadline) {
			leftovers = describe(groupMembers(pgid))
			syscall.Kill(-pgid, syscall.SIGKILL)
			if leftovers == "" {
				leftovers = " (members not readable)"
			}
			return leftovers
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ""
}

// member is one process of a group, as /proc tells it.
type member struct {
	pid     int
	st      geminitest.ProcStat
	cmdline string
}

// groupMembers lists the processes of group pgid from /proc; ok is false
// where there is no /proc to read.
func groupMembers(pgid int) (ms []member, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := geminitest.Stat(pid)
		if !ok || st.Group != pgid {
			continue // gone, or another group's
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		ms = append(ms, member{pid: pid, st: st,
			cmdline: strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")})
	}
	return ms, true
}

// describe names each member on a line of its own.
func describe(ms []member, _ bool) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "\n  pid %d (state %s, parent %d): %s", m.pid, m.st.State, m.st.Parent, m.cmdline)
	}
	return b.String()
}

// groupRunning reports whether a process of group pgid still runs: a
// zombie does not. Without /proc, any member counts.
func groupRunning(pgid int) bool {
	ms, ok := groupMembers(pgid)
	if !ok {
		err := syscall.Kill(-pgid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	for _, m := range ms {
		if m.st.Running() {
			return true
		}
	}
	return false
}

// alive reports whether a process with this pid exists (a zombie counts:
// nobody reaped it yet).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// interrupt asks a server to shut down as a service manager would.
func interrupt(p *os.Process) { p.Signal(syscall.SIGTERM) }
