package proc

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	res, err := Run(t.Context(), Spec{Path: sh, Args: []string{"-c", "echo out; echo err >&2; exit 3"}})
	if err != nil || string(res.Stdout) != "out\n" || strings.TrimSpace(res.Stderr) != "err" || res.Exit != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = Run(t.Context(), Spec{Path: sh, Args: []string{"-c", "yes"}, MaxStdout: 1000})
	if err != nil || !res.Overflow || len(res.Stdout) != 1000 {
		t.Fatalf("overflow: %v %d %v", res.Overflow, len(res.Stdout), err)
	}
	// Only the timeout can end this child before the test's own deadline.
	res, err = Run(t.Context(), Spec{Path: sh, Args: []string{"-c", "exec sleep 60"}, Timeout: 100 * time.Millisecond, KillGrace: 100 * time.Millisecond})
	if err != nil || !res.TimedOut {
		t.Fatalf("timeout: %+v %v", res, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Run(ctx, Spec{Path: sh, Args: []string{"-c", "true"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := Run(t.Context(), Spec{Path: "/nonexistent/program"}); err == nil {
		t.Fatal("a missing program started")
	}
}
