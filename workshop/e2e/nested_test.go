package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/app"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestNestedServerIsQuiet runs the Gemini CLI as this server runs it (with
// the marker in its environment) in a home where the server is registered
// as the README says (the binary on PATH): the CLI starts the server, which offers the model no
// tool, and the CLI has nothing to complain about.
func TestNestedServerIsQuiet(t *testing.T) {
	t.Parallel()
	c := newCLIHome(t)
	line := readmeCommands(t, readmeSection(t, "Register it with a client"), "gemini mcp add", false)[pathForm]
	c.install(t, pathForm, filepath.Dir(serverBin))
	if stdout, stderr, code := c.sh(t, line); code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", line, code, stdout, stderr)
	}
	c.env = append(c.env, app.NestedEnv+"=1")
	stdout, stderr, code := c.client(t, c.cli, "-m", "gemini-nested-model", "-o", "json", "--prompt=hello from a nested call")
	if code != 0 {
		t.Fatalf("gemini: exit %d\nstdout: %s\nstderr: %s", code, clip(stdout, 4000), clip(stderr, 8000))
	}
	var n int
	for _, r := range c.api.Requests() {
		if r.Method != fakeapi.MethodStream {
			continue
		}
		n++
		if !slices.Contains(r.Tools, "read_file") || slices.ContainsFunc(r.Tools, func(s string) bool { return strings.HasPrefix(s, "mcp_gemini_") }) {
			t.Errorf("the nested call offers %v: want the built-in tools and no mcp_gemini_*", r.Tools)
		}
	}
	if n == 0 {
		t.Fatal("the CLI never called the API")
	}
	t.Logf("gemini stderr:\n%s", stderr)
	for _, bad := range []string{"MCP", "mcp", "gemini-mcp-server"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("the CLI's stderr mentions %q:\n%s", bad, stderr)
		}
	}
}
