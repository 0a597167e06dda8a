package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpGoesToStdout: help that was asked for is the command's output
// (stdout, exit 0), names every tool and shows sizes as people write them;
// a mistake goes to stderr only, with exit 2.
func TestHelpGoesToStdout(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"doctor", "--help"}} {
		cmd := e.command(args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\nstderr: %s", args, err, stderr.String())
		}
		out := stdout.String()
		if stderr.Len() != 0 {
			t.Errorf("%v wrote to stderr: %q", args, stderr.String())
		}
		for _, want := range []string{"Usage:", "chat-page", "(default 1MiB)", "(default 32MiB)", "(default 700MiB)", "(default 5m)", "-max-prompt-bytes size", "-timeout duration"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: help lacks %q:\n%s", args, want, out)
			}
		}
		for _, bad := range []string{"(default 0)", "1048576", "33554432", "-max-prompt-bytes value"} {
			if strings.Contains(out, bad) {
				t.Errorf("%v: help shows %q", args, bad)
			}
		}
	}
	cmd := e.command("--no-such-flag")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	if cmd.ProcessState.ExitCode() != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "no-such-flag") || !strings.Contains(stderr.String(), "--help") {
		t.Fatalf("bad flag: exit %d, stdout %q, stderr %q", cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
	}
}
