//go:build linux

package acp

import (
	"errors"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// TestKilledBySignal: a CLI killed by a signal is reported with the
// signal's name, one-shot and warm, not as an exit code.
func TestKilledBySignal(t *testing.T) {
	cold, _ := newTestRunner(t, geminicli.Options{})
	warm, _, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{})
	for name, r := range map[string]backend.Backend{"one-shot": cold, "warm": warm} {
		_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "[[signal:9]]", Dir: geminitest.WorkDir(t)})
		var e *backend.Error
		if !errors.As(err, &e) || e.Kind != backend.KindFailed || !strings.Contains(e.Reason, "killed by signal SIGKILL") || strings.Contains(e.Reason, "-1") || e.Exited {
			t.Errorf("%s: %v", name, err)
		}
	}
}
