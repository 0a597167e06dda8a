package acp

import (
	"os/user"
	"path/filepath"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// TestWarmProcessCLIHome: a warm process's session files are looked for
// where its CLI keeps them: under GEMINI_CLI_HOME, else HOME, else the
// user's home directory in the user database (as the CLI's Node finds it).
func TestWarmProcessCLIHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no home directory in the user database: %v", err)
	}
	// The server's own environment is the processes' base: no HOME there.
	t.Setenv("HOME", "")
	t.Setenv("GEMINI_CLI_HOME", "")
	cliHome, home := t.TempDir(), t.TempDir()
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"GEMINI_CLI_HOME", []string{"HOME=" + home, "GEMINI_CLI_HOME=" + cliHome}, cliHome},
		{"HOME", []string{"HOME=" + home}, home},
		{"neither", nil, u.HomeDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _, _ := newWarmRunner(t, geminicli.Options{Env: c.env}, WarmOptions{SpareAge: -1})
			if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "one", Dir: geminitest.WorkDir(t)}); err != nil {
				t.Fatal(err)
			}
			if got, want := onlyProc(t, r).cliDir, filepath.Join(c.want, ".gemini"); got != want {
				t.Fatalf("the process's CLI directory is %q, want %q", got, want)
			}
		})
	}
}
