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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// readmePath is the README, whose registration examples these tests run.
const readmePath = "../../README.md"

// The README's registrations start the server in one of two installed
// forms: as the binary on PATH, or, in its section for after the first
// release (the npm package is not published before), through npx from
// the npm package, which these tests install offline from the packed
// tarballs.
const (
	npxCommand  = "npx -y gemini-mcp-server"
	pathCommand = "gemini-mcp-server"
)

// form is how a registration starts the server.
type form string

const (
	npxForm  form = "npx"
	pathForm form = "PATH"
)

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

// apiBackend marks the README's registration examples for API-key users.
const apiBackend = "--backend api"

// readmeCommands returns the lines of the section's sh blocks that
// start with prefix, among the API-key examples (those that say --backend
// api) when api is set, among the others when not, by the form they start
// the server in (a trailing # comment cut): one line per form, at least
// one.
func readmeCommands(t *testing.T, section, prefix string, api bool) map[form]string {
	t.Helper()
	found := map[form]string{}
	onPath := regexp.MustCompile(`(^| )` + regexp.QuoteMeta(pathCommand) + `( |$)`)
	for _, block := range codeBlocks(section, "sh") {
		for _, line := range strings.Split(block, "\n") {
			line, _, _ = strings.Cut(line, "#")
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, prefix) || strings.Contains(line, apiBackend) != api {
				continue
			}
			f := pathForm
			if strings.Contains(line, " "+npxCommand) {
				f = npxForm
			} else if !onPath.MatchString(strings.TrimPrefix(line, prefix)) {
				t.Fatalf("the README's command %q starts the server neither with %q nor as %q on PATH", line, npxCommand, pathCommand)
			}
			if _, dup := found[f]; dup {
				t.Fatalf("two README commands starting %q in the %s form (API-key example: %v): %q and %q", prefix, f, api, found[f], line)
			}
			found[f] = line
		}
	}
	if len(found) == 0 {
		t.Fatalf("no README command starting %q (API-key example: %v)", prefix, api)
	}
	return found
}

// readmeSettings returns the mcpServers of the section's json block, the
// API-key example (whose args say --backend api) when api is set, the
// other when not.
func readmeSettings(t *testing.T, api bool) map[string]map[string]any {
	t.Helper()
	var found []map[string]map[string]any
	for _, block := range codeBlocks(readmeSection(t, "Register it with a client"), "json") {
		var snippet struct {
			MCPServers map[string]map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(block), &snippet); err != nil {
			t.Fatalf("a settings snippet of the README: %v\n%s", err, block)
		}
		args, _ := json.Marshal(snippet.MCPServers["gemini"]["args"])
		if strings.Contains(string(args), `"--backend","api"`) == api {
			found = append(found, snippet.MCPServers)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one json block in the README's registration section (API-key example: %v), found %d", api, len(found))
	}
	return found[0]
}

// settingsForm is the form a settings snippet's server starts in.
func settingsForm(t *testing.T, servers map[string]map[string]any) form {
	t.Helper()
	g := servers["gemini"]
	args, _ := g["args"].([]any)
	switch {
	case g["command"] == "npx" && len(args) >= 2 && args[0] == "-y" && args[1] == pathCommand:
		return npxForm
	case g["command"] == pathCommand:
		return pathForm
	}
	t.Fatalf("the README's settings start the server neither with %q nor as %q on PATH: %v", npxCommand, pathCommand, g)
	return ""
}

// onNPX rewrites a snippet of the binary on PATH into the npx form, as
// the README's section for after the first release says to: command npx,
// and args with -y and gemini-mcp-server first.
func onNPX(t *testing.T, servers map[string]map[string]any) map[string]map[string]any {
	t.Helper()
	if settingsForm(t, servers) != pathForm {
		t.Fatalf("not a snippet of the binary on PATH: %v", servers)
	}
	out := map[string]map[string]any{}
	for name, s := range servers {
		c := map[string]any{}
		for k, v := range s {
			c[k] = v
		}
		args, _ := s["args"].([]any)
		c["command"] = "npx"
		c["args"] = append([]any{"-y", pathCommand}, args...)
		out[name] = c
	}
	return out
}

// prependPATH returns env with dirs put first in its PATH.
func prependPATH(env []string, dirs ...string) []string {
	out := slices.Clone(env)
	for i, kv := range out {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			out[i] = "PATH=" + strings.Join(append(slices.Clone(dirs), v), string(os.PathListSeparator))
			return out
		}
	}
	return append(out, "PATH="+strings.Join(dirs, string(os.PathListSeparator)))
}

// install readies the client's home for a registration in form f: for
// the PATH form, the built server's directory first in PATH; for npx, the
// npm packages of the release installed into a fresh prefix, offline,
// which becomes the working directory the client starts servers in (npx
// finds the launcher in its node_modules/.bin, and can fetch nothing),
// with Node's directory in PATH. The server's binary is then the
// release's, reachable only through the launcher.
func (c *cliHome) install(t *testing.T, f form, binDir string) {
	t.Helper()
	if f == pathForm {
		c.env = prependPATH(c.env, binDir)
		return
	}
	p := geminitest.PackedNPM(t)
	x := geminitest.InstallNPM(t, p, "--offline", p.Launcher, p.Platform)
	for _, kv := range x.Env() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
			c.env = append(c.env, kv)
		}
	}
	c.env = prependPATH(c.env, p.NodeBin)
	c.work = x.Prefix
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
		// Node writes its compile cache into TMPDIR as it exits, and the
		// CLI does not wait for the MCP servers it stops on its way out
		// (npx and the launcher, in the npx form), so such a write could
		// race the test's removal of TMPDIR.
		"NODE_DISABLE_COMPILE_CACHE=1",
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

// client runs an MCP client that starts stdio servers and stops them as
// it exits: its run ends when those servers, and what they started, are
// gone, before the test looks at the home or removes it.
func (c *cliHome) client(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code = c.exec(t, name, args...)
	waitHomeFree(t, c.home)
	return stdout, stderr, code
}

// askChat has the model (the fake API) call mcp_gemini_chat through a
// headless `gemini -p`, and checks that the call reached this server, ran
// a Gemini call of its own, and came back to the model as an answer.
func (c *cliHome) askChat(t *testing.T) { c.ask(t, false) }

// ask is askChat; api says the server runs on the API backend, whose own
// call to the fake is its own request, not a nested CLI's.
func (c *cliHome) ask(t *testing.T, api bool) {
	t.Helper()
	const tool = "mcp_gemini_chat"
	inner := "readme: the registered server answers"
	args, _ := json.Marshal(map[string]string{"prompt": inner})
	stdout, stderr, code := c.client(t, c.cli, "-m", "gemini-readme-model", "-o", "json",
		"--prompt=Ask the other Gemini. [[call:"+tool+":"+string(args)+"]]")
	if code != 0 {
		t.Fatalf("gemini -p: exit %d\nstdout: %s\nstderr: %s", code, clip(stdout, 4000), clip(stderr, 8000))
	}
	var offered, answered, nested bool
	var responses []string
	for _, r := range c.api.Requests() {
		if r.Method != fakeapi.MethodStream {
			continue
		}
		if r.LastUserText == inner && api {
			// The API backend sends the prompt alone: no tools, and no
			// system prompt but one a call asks for. Only the CLI adds
			// them, so this is not the CLI.
			nested = true
			if len(r.Tools) > 0 || r.SystemInstruction != "" || r.NumContents != 1 {
				t.Errorf("the server's own call is not the API backend's: tools %v, system instruction %q, %d contents",
					r.Tools, clip(r.SystemInstruction, 200), r.NumContents)
			}
			continue
		}
		if r.LastUserText == inner {
			// The server's own Gemini call reads the same settings, and
			// so starts this server again: that copy must offer the
			// model no tool, or a chat could call itself.
			nested = true
			for _, name := range r.Tools {
				if strings.HasPrefix(name, "mcp_gemini_") {
					t.Errorf("the server's own Gemini call offers the model %s: it can call itself; offered: %v", name, r.Tools)
				}
			}
			if !slices.Contains(r.Tools, "read_file") {
				t.Errorf("the server's own Gemini call offers no built-in tool either, so the check proves nothing: %v", r.Tools)
			}
			continue
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
	if !nested {
		t.Errorf("the fake API never saw the server's own Gemini call")
	}
	if !answered {
		t.Errorf("no functionResponse of %s carries the answer of the server's Gemini call; responses: %s", tool, clip(strings.Join(responses, "\n"), 4000))
	}
}

// TestReadmeGeminiCLIRegistration runs the README's `gemini mcp add`
// lines as written, the npx one and the one of the binary on PATH, with
// the real Gemini CLI in a throwaway home, then has the model call the
// server's chat tool headless: the registration must carry the key and
// the trust a call needs.
func TestReadmeGeminiCLIRegistration(t *testing.T) {
	t.Parallel()
	lines := readmeCommands(t, readmeSection(t, "Register it with a client"), "gemini mcp add", false)
	for _, f := range []form{npxForm, pathForm} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			line, ok := lines[f]
			if !ok {
				t.Fatalf("the README has no `gemini mcp add` line in the %s form: %q", f, lines)
			}
			c := newCLIHome(t)
			c.install(t, f, filepath.Dir(serverBin))
			if stdout, stderr, code := c.sh(t, line); code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", line, code, stdout, stderr)
			}
			stdout, stderr, code := c.client(t, c.cli, "mcp", "list")
			if code != 0 || !regexp.MustCompile(`(?m)^✓ gemini: .*- Connected$`).MatchString(stdout+stderr) {
				t.Fatalf("gemini mcp list: exit %d\n%s%s", code, stdout, stderr)
			}
			c.askChat(t)
		})
	}
}

// TestReadmeGeminiCLISettings puts the README's settings.json snippet
// into the CLI's settings, as written (the binary on PATH) and in the npx
// form the README describes for after the first release, and calls chat
// the same way.
func TestReadmeGeminiCLISettings(t *testing.T) {
	t.Parallel()
	servers := readmeSettings(t, false)
	if f := settingsForm(t, servers); f != pathForm {
		t.Fatalf("the README's settings.json snippet is in the %s form; the test expects the binary on PATH, and the npx form described", f)
	}
	for _, f := range []form{npxForm, pathForm} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			c := newCLIHome(t)
			c.install(t, f, filepath.Dir(serverBin))
			s := servers
			if f == npxForm {
				s = onNPX(t, servers)
			}
			geminitest.SetSetting(t, c.home, "mcpServers", s)
			c.askChat(t)
		})
	}
}

// TestReadmeAPIKeySettings puts the README's API-key snippet into the
// Gemini CLI's settings, as the client, and calls chat the same way: the
// server answers on the API backend, with the key the snippet gives it
// (the fake API takes no other; the CLI passes no key of its own to its
// MCP servers), and runs no Gemini CLI.
func TestReadmeAPIKeySettings(t *testing.T) {
	t.Parallel()
	c := newCLIHome(t)
	servers := readmeSettings(t, true)
	c.install(t, settingsForm(t, servers), filepath.Dir(serverBin))
	key, _ := servers["gemini"]["env"].(map[string]any)["GEMINI_API_KEY"].(string)
	if key == "" {
		t.Fatalf("the README's API-key snippet sets no GEMINI_API_KEY: %v", servers)
	}
	// The client, too, reaches the fake with this key.
	c.env = append(c.env, "GEMINI_API_KEY="+key)
	c.api.RequireKey(key)
	// The Gemini CLI offers a headless model only the tools of a trusted
	// server; other clients have no such setting, so the README leaves it
	// to the Gemini CLI's own example.
	servers["gemini"]["trust"] = true
	geminitest.SetSetting(t, c.home, "mcpServers", servers)
	c.ask(t, true)
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
	cmd.Dir = "../.." // the repository's root, where the README's reader is
	// The README installs the Gemini CLI first: with it in PATH the default
	// backend (auto) has something to run, as on the reader's machine.
	path := filepath.Dir(fakeapi.RealCLI(t)) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd.Env = append(os.Environ(), "GEMINI_MCP_STATE_DIR="+t.TempDir(), "PATH="+path)
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

// otherCLI finds Claude Code or Codex: $GEMINI_MCP_E2E_<NAME>, else the
// one installed beside the Gemini CLI from e2e/npm. Missing, the test
// skips, or fails where the end-to-end suite is required.
func otherCLI(t *testing.T, name string) string {
	t.Helper()
	path := os.Getenv("GEMINI_MCP_E2E_" + strings.ToUpper(name))
	if path == "" {
		path = filepath.Join(filepath.Dir(fakeapi.RealCLI(t)), name)
	}
	if _, err := os.Stat(path); err != nil {
		msg := name + " is not installed beside the Gemini CLI (scripts/test.sh installs workshop/e2e/npm/package-lock.json): " + err.Error()
		if os.Getenv("CI") != "" || os.Getenv(fakeapi.EnvRequired) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// envRecorder is a script that writes its environment to a file (and its
// arguments to the file's name plus ".args") and then runs the server: it stands for the binary in a client's registration,
// to show what the client passes on.
func envRecorder(t *testing.T) (script, envFile string) {
	t.Helper()
	dir := t.TempDir()
	script, envFile = filepath.Join(dir, "gemini-mcp-server"), filepath.Join(dir, "env")
	body := "#!/bin/sh\nenv > '" + envFile + "'\necho \"$*\" > '" + envFile + ".args'\nexec '" + serverBin + "' \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, envFile
}

// TestReadmeClaudeCodeRegistration runs the README's `claude mcp add`
// lines, the CLI ones (npx, and the binary on PATH) and the API-key one,
// with the real Claude Code (offline, in a throwaway home): `claude mcp
// list` must start the server and find it connected, with the key in its
// environment although Claude Code's own environment lacks it. (The API
// backend refuses to start without a key, so a connected API-key server
// has it; for the binary on PATH a script recording its environment
// stands in for it.)
func TestReadmeClaudeCodeRegistration(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Register it with a client")
	for _, api := range []bool{false, true} {
		for f, line := range readmeCommands(t, section, "claude mcp add", api) {
			t.Run(map[bool]string{false: "cli", true: "api"}[api]+"-"+string(f), func(t *testing.T) {
				t.Parallel()
				testClaudeCodeRegistration(t, line, f, api)
			})
		}
	}
	if lines := readmeCommands(t, section, "claude mcp add", false); len(lines) != 2 {
		t.Errorf("want the README's `claude mcp add` in both forms, npx and on PATH: %q", lines)
	}
}

func testClaudeCodeRegistration(t *testing.T, line string, f form, api bool) {
	claude := otherCLI(t, "claude")
	home, work := t.TempDir(), t.TempDir()
	script, envFile := envRecorder(t)
	const key = "readme-claude-key"
	env := []string{"PATH=" + filepath.Dir(claude) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home, "TMPDIR=" + t.TempDir(), "GEMINI_API_KEY=" + key,
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "NO_COLOR=1",
		"GEMINI_MCP_STATE_DIR=" + t.TempDir()}
	c := &cliHome{home: home, work: work, env: env}
	c.install(t, f, filepath.Dir(script))
	if stdout, stderr, code := c.sh(t, line); code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", line, code, stdout, stderr)
	}
	// Claude Code runs without the key in its own environment (started
	// from an IDE, say): the registration must carry it.
	c.env = slices.DeleteFunc(c.env, func(kv string) bool { return strings.HasPrefix(kv, "GEMINI_API_KEY=") })
	stdout, stderr, code := c.client(t, claude, "mcp", "list")
	want := map[form]string{npxForm: npxCommand, pathForm: pathCommand}[f]
	if code != 0 || !regexp.MustCompile(`(?m)^gemini: `+regexp.QuoteMeta(want)+`( .*)? - ✔ Connected$`).MatchString(stdout) {
		t.Fatalf("claude mcp list: exit %d\n%s%s", code, stdout, stderr)
	}
	if f == npxForm {
		if _, err := os.Stat(envFile); err == nil {
			t.Fatal("npx started the recording script on PATH, not the npm package's launcher")
		}
		return
	}
	got, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatalf("the server never started: %v", err)
	}
	if !regexp.MustCompile(`(?m)^GEMINI_API_KEY=` + key + `$`).Match(got) {
		t.Errorf("Claude Code started the server without GEMINI_API_KEY=%s:\n%s", key, got)
	}
	if args, _ := os.ReadFile(envFile + ".args"); strings.Contains(string(args), apiBackend) != api {
		t.Errorf("Claude Code started the server with arguments %q", args)
	}
}

// TestReadmeCodexConfig puts the README's config.toml snippet into a
// throwaway CODEX_HOME and has the real Codex read it back. Codex cannot
// start a server offline without a model provider, so this checks what it
// parsed: the command, the key passed on, and the tool timeout.
func TestReadmeCodexConfig(t *testing.T) {
	t.Parallel()
	codex := otherCLI(t, "codex")
	blocks := codeBlocks(readmeSection(t, "Register it with a client"), "toml")
	if len(blocks) != 1 {
		t.Fatalf("want one toml block in the README's registration section, found %d", len(blocks))
	}
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(blocks[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &cliHome{home: home, work: t.TempDir(), env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + codexHome, "NO_COLOR=1"}}
	stdout, stderr, code := c.exec(t, codex, "mcp", "list", "--json")
	if code != 0 {
		t.Fatalf("codex mcp list: exit %d\n%s%s", code, stdout, stderr)
	}
	var servers []struct {
		Name      string
		Enabled   bool
		Transport struct {
			Type    string
			Command string
			Args    []string
			EnvVars []string `json:"env_vars"`
		}
		ToolTimeoutSec float64 `json:"tool_timeout_sec"`
	}
	if err := json.Unmarshal([]byte(stdout), &servers); err != nil {
		t.Fatalf("codex mcp list --json: %v\n%s", err, stdout)
	}
	if len(servers) != 1 || servers[0].Name != "gemini" || !servers[0].Enabled || servers[0].Transport.Type != "stdio" ||
		strings.TrimSpace(servers[0].Transport.Command+" "+strings.Join(servers[0].Transport.Args, " ")) != pathCommand || !slices.Contains(servers[0].Transport.EnvVars, "GEMINI_API_KEY") || servers[0].ToolTimeoutSec < 300 {
		t.Fatalf("Codex read the README's snippet as %+v\n%s", servers, stdout)
	}
}
