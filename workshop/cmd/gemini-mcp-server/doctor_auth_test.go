package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// TestDoctorSelectedAuthNeedsItsVariables: the CLI takes the auth type of
// its settings over the environment and exits 41 when that type lacks its
// variables; doctor must say so and exit 1, and pass once they are there
// (from the environment or the .env file the CLI loads).
func TestDoctorSelectedAuthNeedsItsVariables(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		selected string
		env      []string
		dotenv   string // written to ~/.gemini/.env
		inCwd    bool   // settings in the workspace, not the user's
		cliHome  bool   // settings under $GEMINI_CLI_HOME
		exit     int
		want     string
	}{
		{name: "api key missing", selected: "gemini-api-key", exit: 1, want: "GEMINI_API_KEY is not set: every call would fail with exit 41"},
		{name: "api key missing, workspace settings", selected: "gemini-api-key", inCwd: true, exit: 1, want: "GEMINI_API_KEY is not set"},
		{name: "api key missing, GEMINI_CLI_HOME", selected: "gemini-api-key", cliHome: true, exit: 1, want: "GEMINI_API_KEY is not set"},
		{name: "api key set", selected: "gemini-api-key", env: []string{"GEMINI_API_KEY=k"}, exit: 0, want: "credentials:"},
		{name: "api key in .env", selected: "gemini-api-key", dotenv: "GEMINI_API_KEY=k\n", exit: 0, want: "credentials:"},
		{name: "vertex missing", selected: "vertex-ai", env: []string{"GEMINI_API_KEY=k"}, exit: 1, want: "GOOGLE_CLOUD_PROJECT with GOOGLE_CLOUD_LOCATION"},
		{name: "vertex set", selected: "vertex-ai", env: []string{"GOOGLE_CLOUD_PROJECT=p", "GOOGLE_CLOUD_LOCATION=l"}, exit: 0, want: "credentials:"},
		{name: "unknown type", selected: "api-key", env: []string{"GEMINI_API_KEY=k"}, exit: 1, want: "does not accept"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			home := t.TempDir()
			dir := filepath.Join(home, ".gemini")
			vars := []string{"HOME=" + home, "GEMINI_CLI_HOME=", geminitest.EnvVersion + "=0.61.0",
				"GEMINI_API_KEY=", "GOOGLE_API_KEY=", "GOOGLE_CLOUD_PROJECT=", "GOOGLE_CLOUD_LOCATION=",
				"GOOGLE_GENAI_USE_VERTEXAI=", "GOOGLE_GENAI_USE_GCA=", "GOOGLE_APPLICATION_CREDENTIALS="}
			switch {
			case c.inCwd:
				dir = filepath.Join(e.work, ".gemini")
			case c.cliHome:
				cli := t.TempDir()
				dir = filepath.Join(cli, ".gemini")
				vars = append(vars, "GEMINI_CLI_HOME="+cli)
			}
			os.MkdirAll(dir, 0o700)
			settings := `{"security":{"auth":{"selectedType":"` + c.selected + `"}},"general":{"sessionRetention":{"enabled":false}}}`
			if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o600); err != nil {
				t.Fatal(err)
			}
			if c.dotenv != "" {
				os.WriteFile(filepath.Join(dir, ".env"), []byte(c.dotenv), 0o600)
			}
			e.vars = append(append(e.vars, vars...), c.env...)
			cmd := e.command("doctor")
			out, _ := cmd.CombinedOutput()
			if cmd.ProcessState.ExitCode() != c.exit || !strings.Contains(string(out), c.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", cmd.ProcessState.ExitCode(), c.exit, c.want, out)
			}
		})
	}
}
