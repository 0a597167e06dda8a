package geminitest

import (
	"io"
	"os"
	"os/exec"
	"testing"
)

// TestAlive checks Alive on a real process: running while it waits for
// its stdin, gone once it has ended and been reaped.
func TestAlive(t *testing.T) {
	if os.Getenv("GEMINITEST_ALIVE_CHILD") == "1" {
		io.Copy(io.Discard, os.Stdin)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAlive$")
	cmd.Env = append(os.Environ(), "GEMINITEST_ALIVE_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Alive(pid) {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("a process waiting for its stdin (pid %d) is not alive", pid)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if Alive(pid) {
		t.Fatalf("pid %d is alive after it ended and was reaped", pid)
	}
	if Alive(0) || Alive(-1) {
		t.Fatal("Alive of a pid that cannot be a process")
	}
}
