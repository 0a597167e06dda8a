package main

import (
	"strings"
	"testing"
)

// TestStoreStartupErrors: a --store the server cannot open stops it at
// start (exit 1) with what to do, before it serves anything.
func TestStoreStartupErrors(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--store", "mongodb://db:27017"}, 1, []string{"this server has no", "mongodb", "it supports", "memory:", "sqlite:"}},
		{[]string{"--store", "sessions.db"}, 2, []string{"use sqlite:PATH, memory: or redis://"}},
		{[]string{"--max-turns", "0"}, 2, []string{"--max-turns must be at least 1"}},
		{[]string{"--session-ttl", "30s"}, 2, []string{"--session-ttl must be at least 1m"}},
	} {
		cmd := e.command(tc.args...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, cmd.ProcessState.ExitCode(), tc.code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: no %q in\n%s", tc.args, w, out)
			}
		}
	}
}
