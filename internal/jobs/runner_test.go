package jobs

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// TestOrphaned: a working job is orphaned, to a process of its node, when
// its runner was an earlier run of the same pid or a pid no process has;
// never when its runner is this run, another live process, another node,
// unknown, or when it has a resume handle or has finished.
func TestOrphaned(t *testing.T) {
	me := Runner{Node: "linux:boot:pid:[1]", PID: 1, Run: "now"}
	dead := func(int) bool { return false }
	alive := func(int) bool { return true }
	working := func(r *Runner) Job {
		j := newJob(t)
		if err := j.Start(t0); err != nil {
			t.Fatal(err)
		}
		j.Runner = r
		return j
	}
	cases := []struct {
		name  string
		j     Job
		alive func(int) bool
		want  bool
	}{
		{"an earlier run of this pid", working(&Runner{Node: me.Node, PID: 1, Run: "before"}), alive, true},
		{"a pid no process has", working(&Runner{Node: me.Node, PID: 77, Run: "before"}), dead, true},
		{"this run", working(&Runner{Node: me.Node, PID: 1, Run: "now"}), dead, false},
		{"a live process", working(&Runner{Node: me.Node, PID: 77, Run: "other"}), alive, false},
		{"another node", working(&Runner{Node: "host:elsewhere", PID: 1, Run: "before"}), dead, false},
		{"no runner", working(nil), dead, false},
		{"no liveness check", working(&Runner{Node: me.Node, PID: 77, Run: "before"}), nil, false},
	}
	for _, c := range cases {
		if got := c.j.Orphaned(me, c.alive); got != c.want {
			t.Errorf("%s: orphaned %v, want %v", c.name, got, c.want)
		}
	}
	j := working(&Runner{Node: me.Node, PID: 1, Run: "before"})
	j.Resume = "v1_interaction"
	if j.Orphaned(me, dead) {
		t.Error("a job with a resume handle is orphaned")
	}
	j.Resume = ""
	if err := j.Fail("no", t0); err != nil || j.Orphaned(me, dead) {
		t.Errorf("a failed job is orphaned (%v)", err)
	}
}

// TestAlive: this process is alive; a child that has been reaped is not.
func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true:", err)
	}
	if Alive(cmd.Process.Pid) && runtime.GOOS != "windows" {
		t.Errorf("the reaped child %d is alive", cmd.Process.Pid)
	}
}
