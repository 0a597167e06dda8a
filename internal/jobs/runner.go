package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"time"
)

// Runner names the process that runs a job, so that a server started
// again on the same store knows the jobs its previous run left working
// (killed, or stopped without ending them) and fails them at once, rather
// than a minute later when their heartbeat is stale (StaleAfter), while
// the jobs of another live process sharing the store are left alone.
//
// Node is where process ids mean one process: the kernel's boot id and
// the process id namespace on Linux (a container has its own; a
// container started again, a new one, so its jobs fall back to
// StaleAfter), the host name elsewhere. PID is the process's id there and
// Run a random id of this process's run. A job of the same node is
// orphaned when its runner is gone: its PID is this process's own but
// the run another (the previous run had this pid: a container's server
// is often pid 1), or no process has its PID. A live process with that
// pid, another server or one that reused the pid, leaves the job to
// StaleAfter.
type Runner struct {
	Node string `json:"node"`
	PID  int    `json:"pid"`
	Run  string `json:"run"`
}

// Self is this process as a job's runner.
var Self = sync.OnceValue(func() Runner {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return Runner{Node: node(), PID: os.Getpid(), Run: hex.EncodeToString(b[:])}
})

// node is where this process's id names it (see Runner): the boot id and
// pid namespace where the system has them, else the host name.
func node() string {
	boot, berr := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, nerr := os.Readlink("/proc/self/ns/pid")
	if berr == nil && nerr == nil {
		return "linux:" + strings.TrimSpace(string(boot)) + ":" + ns
	}
	host, _ := os.Hostname()
	return "host:" + host
}

// OrphanedError is the error a job its runner left behind fails with.
const OrphanedError = "the server running this job stopped before it finished (it was restarted, or killed): start the call again"

// Orphaned reports whether j was left running by a process that is gone,
// as me, a process on the same node, can tell (see Runner); alive says
// whether a process id is in use. A job with a resume handle is not
// orphaned: its work goes on without its process (see Resume).
func (j Job) Orphaned(me Runner, alive func(pid int) bool) bool {
	r := j.Runner
	switch {
	case j.Status.Final() || j.Resume != "" || r == nil || r.Node == "" || r.Node != me.Node || r.Run == me.Run:
		return false
	case r.PID == me.PID:
		return true
	}
	return alive != nil && !alive(r.PID)
}

// FailOrphaned fails owner's job id if it is Orphaned, to me, at now, and
// returns it as it then is.
func FailOrphaned(ctx context.Context, s Store, owner, id string, me Runner, alive func(pid int) bool, now time.Time) (Job, error) {
	return Update(ctx, s, owner, id, func(j *Job) (bool, error) {
		if !j.Orphaned(me, alive) {
			return false, nil
		}
		return true, j.Fail(OrphanedError, now)
	})
}
