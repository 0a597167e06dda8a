package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// residentMB returns the resident memory of process pid in megabytes, from /proc.
func residentMB(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb >> 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// TestACPAlloc checks that [[alloc:MB]] grows the process's resident memory and keeps it grown.
func TestACPAlloc(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	p := s.startACP()
	info := p.newSession(s.dir)
	pid := p.cmd.Process.Pid
	before := residentMB(t, pid)
	p.mustAnswer(info.SessionID, "[[alloc:64]]")
	p.mustAnswer(info.SessionID, "[[alloc:32]]")
	p.mustAnswer(info.SessionID, "later")
	if after := residentMB(t, pid); after-before < 90 {
		t.Errorf("resident memory went from %d MB to %d MB after allocating 96 MB", before, after)
	}
}
