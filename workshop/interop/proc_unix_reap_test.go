//go:build linux

package interop

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReapGroupNamesLeftovers checks the helper every CLI run ends with: a
// child left running after its parent exited is named and killed; one
// that exited and waits only for pid 1 to reap it is not a leftover.
func TestReapGroupNamesLeftovers(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 600 & exit 0")
	setProcessGroup(cmd)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	left := reapGroup(cmd, 100*time.Millisecond)
	if !strings.Contains(left, "sleep 600") {
		t.Fatalf("reapGroup named %q, not the sleep left behind", left)
	}
	// A zombie: sh forks true and becomes sleep, which never reaps it.
	// Once the sleep is killed, the zombie is pid 1's to reap, whenever.
	zombie := exec.Command("sh", "-c", "true & exec sleep 600")
	setProcessGroup(zombie)
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(leftoverBound); ; time.Sleep(10 * time.Millisecond) {
		ms, _ := groupMembers(zombie.Process.Pid)
		if slices.ContainsFunc(ms, func(m member) bool { return !m.st.Running() }) {
			break
		}
		if time.Now().After(deadline) {
			zombie.Process.Kill()
			t.Fatalf("no zombie in the group:%s", describe(ms, true))
		}
	}
	zombie.Process.Kill()
	zombie.Wait()
	if left := reapGroup(zombie, 0); left != "" {
		t.Fatalf("a child that had exited was reported:%s", left)
	}
	done := exec.Command("true")
	setProcessGroup(done)
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	if left := reapGroup(done, leftoverBound); left != "" {
		t.Fatalf("a group that emptied was reported:%s", left)
	}
}
