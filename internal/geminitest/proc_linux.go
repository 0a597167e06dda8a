package geminitest

import (
	"os"
	"strconv"
	"strings"
)

// Alive reports whether pid is a running process; a zombie (ended, not yet
// reaped by its parent) does not count. On Linux it reads /proc/PID/stat;
// elsewhere it asks the system whether the process exists (on other Unix
// systems a zombie then counts as running, see proc_unix.go).
func Alive(pid int) bool {
	st, ok := Stat(pid)
	return ok && st.Running()
}

// ProcStat is what /proc/PID/stat says of a process.
type ProcStat struct {
	// State is its state letter: "R", "S", "D", "Z" (a zombie: ended, not
	// yet reaped), …
	State string
	// Parent and Group are its parent's pid and its process group.
	Parent, Group int
}

// Running says whether the process runs: it has not ended (a zombie, or
// dead).
func (st ProcStat) Running() bool { return st.State != "Z" && st.State != "X" }

// Stat reads /proc/PID/stat; ok is false when the process is gone (or
// where there is no /proc: see proc_unix.go). A stat that cannot be read
// for its fields leaves them zero: the process exists, in no known state.
func Stat(pid int) (st ProcStat, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, false
	}
	// The fields after the command's closing parenthesis (the command may
	// hold one): state, ppid, pgrp.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ProcStat{}, true
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return ProcStat{}, true
	}
	st.State = f[0]
	st.Parent, _ = strconv.Atoi(f[1])
	st.Group, _ = strconv.Atoi(f[2])
	return st, true
}
