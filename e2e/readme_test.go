package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// readmePath is the README, whose registration examples these tests run.
const readmePath = "../README.md"

// binPlaceholder is how the README names the server binary in its examples.
const binPlaceholder = "/path/to/gemini-mcp-server"

// readmeSection returns the text of the README section headed "## title",
// up to the next section.
func readmeSection(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## "+title+"\n")
	if i < 0 {
		t.Fatalf("README has no section %q", title)
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	return s
}

// codeBlocks returns the contents of the section's fenced blocks in lang.
func codeBlocks(section, lang string) []string {
	re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	return out
}

// readmeCommand returns the one line of the section's sh blocks that
// starts with prefix.
func readmeCommand(t *testing.T, section, prefix string) string {
	t.Helper()
	var found []string
	for _, block := range codeBlocks(section, "sh") {
		for _, line := range strings.Split(block, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), prefix) {
				found = append(found, strings.TrimSpace(line))
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one README command starting %q, found %q", prefix, found)
	}
	return found[0]
}

// cliHome is a throwaway home for the real Gemini CLI, which reaches the
// fake API and finds `gemini` (itself) first in PATH, as a user's would.
type cliHome struct {
	cli  string
	api  *fakeapi.Server
	home string
	work string
	env  []string
}

func newCLIHome(t *testing.T) *cliHome {
	t.Helper()
	cli := fakeapi.RealCLI(t)
	if serverBin == "" {
		t.Fatal("the server binary was not built")
	}
	c := &cliHome{cli: cli, api: fakeapi.New(), home: t.TempDir(), work: t.TempDir()}
	t.Cleanup(c.api.Close)
	c.env = append([]string{
		"PATH=" + filepath.Dir(cli) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TMPDIR=" + t.TempDir(),
		"GEMINI_CLI_NO_RELAUNCH=true",
		"NO_COLOR=1",
	}, c.api.Home(t, c.home)...)
	return c
}

// sh runs a shell command line in the CLI's home and working directory.
func (c *cliHome) sh(t *testing.T, line string) (stdout, stderr string, code int) {
	t.Helper()
	return c.exec(t, "sh", "-c", line)
}

func (c *cliHome) exec(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env, cmd.Dir, cmd.WaitDelay = c.env, c.work, 5*time.Second
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %q: still running after 3 minutes\nstdout: %s\nstderr: %s", name, args, so.String(), se.String())
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("%s: %v", name, err)
	}
	return so.String(), se.String(), cmd.ProcessState.ExitCode()
}

// askChat has the model (the fake API) call mcp_gemini_chat through a
// headless `gemini -p`, and checks that the call reached this server, ran
// a Gemini call of its own, and came back to the model as an answer.
func (c *cliHome) askChat(t *testing.T) {
	t.Helper()
	const tool = "mcp_gemini_chat"
	inner := "readme: the registered server answers"
	args, _ := json.Marshal(map[string]string{"prompt": inner})
	stdout, stderr, code := c.exec(t, c.cli, "-m", "gemini-readme-model", "-o", "json",
		"--prompt=Ask the other Gemini. [[call:"+tool+":"+string(args)+"]]")
	if code != 0 {
		t.Fatalf("gemini -p: exit %d\nstdout: %s\nstderr: %s", code, clip(stdout, 4000), clip(stderr, 8000))
	}
	var offered, answered bool
	var responses []string
	for _, r := range c.api.Requests() {
		if r.Method != fakeapi.MethodStream || r.LastUserText == inner {
			continue // the server's own Gemini call
		}
		offered = offered || strings.Contains(strings.Join(r.Tools, ","), tool)
		for _, fr := range r.FunctionResponses {
			responses = append(responses, string(fr.Response))
			// The server's answer is the fake API's answer to its own
			// call, whose prompt is inner.
			if fr.Name == tool && strings.Contains(string(fr.Response), "fake-api answer: ") &&
				strings.Contains(string(fr.Response), "last="+inner) && !strings.Contains(string(fr.Response), "Error executing gemini") {
				answered = true
			}
		}
	}
	if !offered {
		t.Errorf("the CLI never offered %s to the model", tool)
	}
	if !answered {
		t.Errorf("no functionResponse of %s carries the answer of the server's Gemini call; responses: %s", tool, clip(strings.Join(responses, "\n"), 4000))
	}
}

// TestReadmeGeminiCLIRegistration runs the README's `gemini mcp add` line
// as written (the binary's path put in), with the real Gemini CLI in a
// throwaway home, then has the model call the server's chat tool headless:
// the registration must carry the key and the trust a call needs.
func TestReadmeGeminiCLIRegistration(t *testing.T) {
	t.Parallel()
	c := newCLIHome(t)
	line := readmeCommand(t, readmeSection(t, "Register it with a client"), "gemini mcp add")
	line = strings.ReplaceAll(line, binPlaceholder, serverBin)
	if stdout, stderr, code := c.sh(t, line); code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", line, code, stdout, stderr)
	}
	stdout, stderr, code := c.exec(t, c.cli, "mcp", "list")
	if code != 0 || !regexp.MustCompile(`(?m)^✓ gemini: .*- Connected$`).MatchString(stdout+stderr) {
		t.Fatalf("gemini mcp list: exit %d\n%s%s", code, stdout, stderr)
	}
	c.askChat(t)
}

// TestReadmeGeminiCLISettings puts the README's settings.json snippet
// into the CLI's settings, the binary's path put in, and calls chat the
// same way.
func TestReadmeGeminiCLISettings(t *testing.T) {
	t.Parallel()
	c := newCLIHome(t)
	var snippet struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	blocks := codeBlocks(readmeSection(t, "Register it with a client"), "json")
	if len(blocks) != 1 {
		t.Fatalf("want one json block in the README's registration section, found %d", len(blocks))
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(blocks[0], binPlaceholder, serverBin)), &snippet); err != nil {
		t.Fatalf("the README's settings snippet: %v", err)
	}
	path := filepath.Join(c.home, ".gemini", "settings.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var settings map[string]any
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatal(err)
	}
	settings["mcpServers"] = snippet.MCPServers
	if b, err = json.Marshal(settings); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c.askChat(t)
}

// TestReadmeTwoCommands runs the README's command that builds and starts
// the server, its output put in a temporary directory, and checks that
// what starts is the built binary, answering MCP at once: `go run` would
// compile first, for longer than MCP clients wait.
func TestReadmeTwoCommands(t *testing.T) {
	t.Parallel()
	blocks := codeBlocks(readmeSection(t, "The two commands"), "sh")
	if len(blocks) != 2 {
		t.Fatalf("want two commands, found %q", blocks)
	}
	line := strings.TrimSpace(blocks[0])
	if strings.Contains(line, "go run") {
		t.Fatalf("the README starts the server with go run: %s", line)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gemini-mcp-server")
	run := strings.Replace(strings.Replace(line, "-o gemini-mcp-server ", "-o "+bin+" ", 1), "&& ./gemini-mcp-server", "&& "+bin, 1)
	if run == line || strings.Contains(run, "./gemini-mcp-server") {
		t.Fatalf("the README's command no longer has the shape `go build -o gemini-mcp-server ... && ./gemini-mcp-server`: %s", line)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", run)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GEMINI_MCP_STATE_DIR="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var se geminitest.LockedBuffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}`+"\n")
	// The answer comes before stdin closes: closing it ends the session.
	answer, _ := bufio.NewReader(stdout).ReadString('\n')
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\nstderr: %s", run, err, se.String())
	}
	if !strings.Contains(answer, `"serverInfo":{"name":"gemini-mcp-server"`) {
		t.Fatalf("%s answered %q\nstderr: %s", run, answer, se.String())
	}
}
