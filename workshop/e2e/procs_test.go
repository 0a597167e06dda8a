package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// homeProcesses lists the live processes that run with HOME=home, by
// their command lines: zombies (reaped soon by whoever is their parent)
// and the process except aside. ok is false where there is no /proc to
// look in.
func homeProcesses(home string, except int) (procs map[int]string, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	needle := []byte("\x00HOME=" + home + "\x00")
	procs = map[int]string{}
	for _, p := range entries {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == except {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), needle) {
			continue
		}
		if !geminitest.Alive(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		procs[pid] = string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	return procs, true
}

// waitHomeFree waits until no process runs with HOME=home. A client such
// as the Gemini CLI exits without waiting for the MCP servers it stops,
// and a server then stops its own Gemini CLI processes, which write
// under home as they go: the test must not remove home, or look at
// what is in it, before they are gone. It fails the test, naming them,
// when some still run after a minute (the server must end what it
// started once its client has gone), and does nothing without /proc.
func waitHomeFree(t *testing.T, home string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var left map[int]string
	err := geminitest.Poll(ctx, "the processes with HOME="+home+" to exit", func() (bool, error) {
		procs, ok := homeProcesses(home, 0)
		left = procs
		return !ok || len(procs) == 0, nil
	})
	if err != nil {
		t.Errorf("%v: still running: %v", err, left)
	}
}
