package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// ownGroup puts cmd in a process group of its own, so that whatever it
// leaves behind can be swept with killGroup, and a Ctrl-C at the terminal
// reaches only the bench, which then shuts its servers down in order.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills what is left of the process group led by pid. It is
// called after the leader has been waited for; an empty group is fine.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// terminate asks a process to stop, as a service manager would.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// memInfo is a process's resident set, now and at its peak, and the
// resident set's anonymous (private: heap, stacks) and file-backed (the
// binary's pages it touched, shared libraries) parts, in bytes.
type memInfo struct{ rss, hwm, anon, file float64 }

// readMem reads VmRSS, VmHWM, RssAnon and RssFile from /proc/<pid>/status.
func readMem(pid int) (memInfo, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memInfo{}, err
	}
	defer f.Close()
	return parseMem(f, fmt.Sprintf("/proc/%d/status", pid))
}

// peakRSS is an exited process's peak resident set in bytes (Linux gives
// ru_maxrss in KiB).
func peakRSS(ps *os.ProcessState) float64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return float64(ru.Maxrss) * 1024
	}
	return 0
}

// machine describes the CPU and memory for the report.
func machine() (cpu string, memBytes float64) {
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "MemTotal" {
				f := strings.Fields(v)
				if len(f) == 2 {
					kb, _ := strconv.ParseFloat(f[0], 64)
					memBytes = kb * 1024
				}
				break
			}
		}
	}
	return cpu, memBytes
}

// kernel is the running kernel's release.
func kernel() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return "Linux " + strings.TrimSpace(string(data))
}

// loadAvg is the 1-minute load average, to show how busy the machine was.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// cpuTimes is CPU time (user+system, all threads) in seconds: a process's
// own, and that of all its descendants, both those it (or they) waited for
// (cutime/cstime in /proc/<pid>/stat) and those still alive, such as the
// warm backend's long-lived gemini --acp processes. CPU time hardly depends
// on what else runs on the machine, which makes it the steadier of the two
// measures on a busy one.
type cpuTimes struct{ self, children float64 }

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times; it is 100
// on every Linux architecture Go supports.
const clockTicks = 100

// statFields returns the fields of /proc/<pid>/stat after the command
// name, which is in parentheses and may hold spaces: f[0] is the state
// (field 3), f[1] the parent pid, f[11] utime (field 14), f[12] stime,
// f[13] cutime, f[14] cstime.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f, nil
}

// ownCPU is a process's own CPU time and that of the children it waited for.
func ownCPU(pid int) (self, reaped float64, err error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, 0, err
	}
	var v [4]float64
	for k := range v {
		if v[k], err = strconv.ParseFloat(f[11+k], 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
	}
	return (v[0] + v[1]) / clockTicks, (v[2] + v[3]) / clockTicks, nil
}

// readCPU sums the CPU time of pid's process tree. A process is counted
// once: while alive through its own entry, once waited for in its
// parent's cutime.
func readCPU(pid int) (cpuTimes, error) {
	self, reaped, err := ownCPU(pid)
	if err != nil {
		return cpuTimes{}, err
	}
	c := cpuTimes{self: self, children: reaped}
	for _, d := range descendants(pid) {
		s, r, err := ownCPU(d)
		if err != nil {
			continue // it ended meanwhile; its time is in its parent's cutime from now on
		}
		c.children += s + r
	}
	return c, nil
}

func (c cpuTimes) minus(o cpuTimes) cpuTimes {
	return cpuTimes{self: c.self - o.self, children: c.children - o.children}
}

// descendants lists the live descendants of pid, from a scan of /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(p)
		if err != nil {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			kids[pp] = append(kids[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range kids[p] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

// descendantsRSS sums VmRSS over pid's live descendants: for the warm
// backend, its gemini --acp processes.
func descendantsRSS(pid int) float64 {
	var sum float64
	for _, d := range descendants(pid) {
		if m, err := readMem(d); err == nil {
			sum += m.rss
		}
	}
	return sum
}
