package acp

import (
	"os"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

var fakeGemini string

func TestMain(m *testing.M) { os.Exit(geminitest.RunWithFake(m, &fakeGemini)) }

// newTestRunner is the one-shot backend on the fake, to compare with.
func newTestRunner(t *testing.T, opts geminicli.Options, extraEnv ...string) (*cli.Runner, string) {
	t.Helper()
	env, log := geminitest.TestFakeEnv(t, extraEnv...)
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
