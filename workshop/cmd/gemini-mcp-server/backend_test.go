package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestAutoBackendWithNothingFailsAtStart: with no gemini executable and no
// API credentials, --backend auto (the default) refuses to start, saying
// how to set up either backend, instead of serving calls that all fail.
func TestAutoBackendWithNothingFailsAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := exec.Command(serverBin)
	cmd.Env = []string{"PATH=/nonexistent", "HOME=" + t.TempDir(), "GEMINI_MCP_STATE_DIR=" + e.state}
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = strings.NewReader(""), &stderr
	err := cmd.Run()
	out := stderr.String()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(out, "--backend auto found no way to reach Gemini") ||
		!strings.Contains(out, "npm install -g @google/gemini-cli") || !strings.Contains(out, "GEMINI_API_KEY") {
		t.Fatalf("exit %d (%v):\n%s", cmd.ProcessState.ExitCode(), err, out)
	}
}
