package acp

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

var fakeGemini string

func TestMain(m *testing.M) { os.Exit(geminitest.RunWithFake(m, &fakeGemini)) }

// fakeEnv gives the fake a private home and log, and returns the log path.
func fakeEnv(t *testing.T, extra ...string) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "invocations.jsonl")
	env := append(geminitest.FakeEnv(filepath.Join(dir, "home"), log, 30*time.Second), extra...)
	return env, log
}

// newTestRunner is the one-shot backend on the fake, to compare with.
func newTestRunner(t *testing.T, opts cli.Options, extraEnv ...string) (*cli.Runner, string) {
	t.Helper()
	env, log := fakeEnv(t, extraEnv...)
	opts.Gemini = fakeGemini
	opts.Env = append(env, opts.Env...)
	return cli.NewRunner(opts, nil), log
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
