package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/buildinfo"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
)

var (
	fakeGemini string
	serverBin  string
)

// TestMain builds the fake CLI and this command once for the package.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		fake, cleanup, err := geminitest.BuildFake()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cleanup()
		fakeGemini = fake
		dir, err := os.MkdirTemp("", "gemini-mcp-server-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		serverBin = filepath.Join(dir, "gemini-mcp-server")
		if runtime.GOOS == "windows" {
			serverBin += ".exe"
		}
		// Without the race detector: a hundred tests start it, and its
		// own packages' tests run under -race.
		if err := geminitest.BuildServer(serverBin, false, "-ldflags",
			"-X "+buildinfo.VersionVar+"="+testVersion+" -X "+buildinfo.CommitVar+"="+testCommit+" -X "+buildinfo.DateVar+"="+testDate); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer removeMCPDown()
		return m.Run()
	}())
}

// The version, commit and date stamped into the binary the tests run.
const (
	testVersion = "v9.8.7-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testDate    = "2026-01-02T03:04:05Z"
)

type env struct {
	log, state, work string
	vars             []string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{log: filepath.Join(dir, "inv.jsonl"), state: filepath.Join(dir, "state"), work: work}
	e.vars = append(append(os.Environ(), geminitest.FakeEnv(filepath.Join(dir, "fakehome"), e.log, 30*time.Second)...),
		"GEMINI_MCP_STATE_DIR="+e.state,
		"GEMINI_MCP_GEMINI="+fakeGemini,
		// One CLI process per call, whose end the tests check; the warm
		// backend has tests of its own.
		"GEMINI_MCP_BACKEND=oneshot",
		// Over HTTP, a SIGTERM cancels the calls in flight at once, as
		// the tests of shutdown expect; the drain has tests of its own.
		"GEMINI_MCP_DRAIN_DELAY=0",
		"GEMINI_MCP_DRAIN_TIMEOUT=0",
	)
	return e
}

func (e *env) command(args ...string) *exec.Cmd {
	cmd := exec.Command(serverBin, args...)
	cmd.Env = e.vars
	cmd.Dir = e.work
	return cmd
}

func connect(t *testing.T, cmd *exec.Cmd) *mcp.ClientSession {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	return cs
}

func TestStdioChatAndReply(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := connect(t, e.command())
	init := cs.InitializeResult()
	if init.ServerInfo.Name != "gemini-mcp-server" || init.ServerInfo.Version != "v9.8.7-test" {
		t.Fatalf("serverInfo %+v", init.ServerInfo)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	// Every tool of the registry: the binary is built as the server is.
	if err != nil || len(tools.Tools) != len(server.ToolNames()) {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "mcp", "model": "gemini-x"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	if got, want := res.Content[0].(*mcp.TextContent).Text, geminitest.Answer(1, "gemini-x", "", "mcp"); got != want {
		t.Fatalf("chat text %q, want %q", got, want)
	}
	id, _ := res.Meta["sessionId"].(string)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": "more", "sessionId": id}})
	if err != nil || res.IsError || res.Meta["sessionId"] != id {
		t.Fatalf("chat-reply: %v %+v", err, res)
	}
	inv, _ := geminitest.ReadLog(e.log)
	if len(inv) != 2 || inv[1].Cwd != e.work {
		t.Fatalf("invocations %+v", inv)
	}
}

// TestStdioEOFStopsRunningCall closes the server's stdin while a call
// runs, as a client that goes away does: the server must stop the CLI
// (which here ignores SIGINT and SIGTERM), remove its temp files and exit 0
// within 5 s. It speaks raw JSON-RPC, because the SDK client's Close waits
// for calls in flight.
func TestStdioEOFStopsRunningCall(t *testing.T) {
	testShutdownDuringCall(t, func(cmd *exec.Cmd, stdin io.Closer) { stdin.Close() })
}

// TestSignalStopsRunningCall sends SIGTERM or SIGINT while a call runs:
// the server stops taking calls, cancels the one in flight, reaps the CLI
// and exits 0 within 5 s.
func TestSignalStopsRunningCall(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			testShutdownDuringCall(t, func(cmd *exec.Cmd, _ io.Closer) { cmd.Process.Signal(sig) })
		})
	}
}

// TestStdioStopsWithoutDrain: a stdio server has no drain: with the
// drain's settings at ten minutes, the end of stdin, SIGTERM and SIGINT
// each stop it as at once as without them (within 5 s, the CLI's kill
// grace included).
func TestStdioStopsWithoutDrain(t *testing.T) {
	drain := []string{"GEMINI_MCP_DRAIN_DELAY=10m", "GEMINI_MCP_DRAIN_TIMEOUT=10m"}
	t.Run("EOF", func(t *testing.T) {
		t.Parallel()
		testShutdownDuringCall(t, func(cmd *exec.Cmd, stdin io.Closer) { stdin.Close() }, drain...)
	})
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			testShutdownDuringCall(t, func(cmd *exec.Cmd, _ io.Closer) { cmd.Process.Signal(sig) }, drain...)
		})
	}
}

// testShutdownDuringCall starts a stdio server (with env added to its
// environment), starts a call whose CLI and its child ignore SIGTERM, and
// stops the server with stop: it must exit 0 within 5 s, its CLI and the
// child gone, its temporary files removed.
func testShutdownDuringCall(t *testing.T, stop func(cmd *exec.Cmd, stdin io.Closer), env ...string) {
	if runtime.GOOS == "windows" {
		t.Skip("process checks use /proc")
	}
	e := newEnv(t)
	tmp := t.TempDir()
	e.vars = append(e.vars, "TMPDIR="+tmp)
	e.vars = append(e.vars, env...)
	cmd := e.command()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"[[ignoreterm]] [[child]]","systemPrompt":"S"}}}
`)
	inv := geminitest.WaitInvocation(t, e.log, 10*time.Second, geminitest.HasChild)
	start := time.Now()
	stop(cmd, stdin)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server exited with %v\nstderr: %s", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("server still running 5 s after EOF\nstderr: %s", stderr.String())
	}
	t.Logf("server exited %v after the stop", time.Since(start).Round(time.Millisecond))
	for _, pid := range []int{inv.Pid, inv.ChildPid} {
		if geminitest.Alive(pid) {
			t.Errorf("pid %d outlived the server", pid)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "gemini-mcp-*")); len(m) != 0 {
		t.Fatalf("left behind: %v", m)
	}
}

// TestStdioWarm runs calls through the default warm backend, then closes
// stdin: the server exits 0 and its gemini --acp process is gone.
func TestStdioWarm(t *testing.T) {
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_BACKEND=warm")
	cmd := e.command()
	cs := connect(t, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "warm one", "model": "gemini-x"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	if got, want := res.Content[0].(*mcp.TextContent).Text, geminitest.Answer(1, "gemini-x", "", "warm one"); got != want {
		t.Fatalf("chat text %q, want %q", got, want)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": "warm two", "sessionId": res.Meta["sessionId"]}})
	if err != nil || res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "fake-gemini turn=2 ") {
		t.Fatalf("chat-reply: %v %+v", err, res)
	}
	inv, _ := geminitest.ReadLog(e.log)
	if len(inv) != 1 || inv[0].Argv[0] != "--acp" {
		t.Fatalf("want one gemini --acp process, got %+v", inv)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("server exit: %v", err)
	}
	if geminitest.Alive(inv[0].Pid) {
		t.Fatal("the warm process outlived the server")
	}
}

func TestHelpVersionAndBadFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out, err := e.command("--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Usage:") || !strings.Contains(string(out), "GEMINI_MCP_TIMEOUT") || !strings.Contains(string(out), "doctor") {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	want := "gemini-mcp-server " + testVersion + " (commit " + testCommit + ", built " + testDate + ")\n"
	for _, arg := range []string{"--version", "version"} {
		out, err = e.command(arg).Output()
		if err != nil || string(out) != want {
			t.Fatalf("%s: %v %q, want %q", arg, err, out, want)
		}
	}
	cmd := e.command("--approval-mode", "always")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "approval-mode") {
		t.Fatalf("bad flag: exit %d %q", cmd.ProcessState.ExitCode(), out)
	}
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{
  // comments are allowed here
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "general": {"sessionRetention": {"enabled": false}}
}`), 0o600)
	e.vars = append(e.vars, "HOME="+home, "GEMINI_API_KEY=k", geminitest.EnvVersion+"=0.61.0")
	cmd := e.command("doctor")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 0 || !strings.Contains(string(out), "gemini version 0.61.0") ||
		!strings.Contains(string(out), "GEMINI_API_KEY") || !strings.Contains(string(out), "session retention is off") {
		t.Fatalf("healthy doctor: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
	// No CLI and no credentials: blocking, with the fixes named.
	bare := []string{"PATH=/nonexistent", "HOME=" + t.TempDir(), "GEMINI_MCP_STATE_DIR=" + e.state}
	cmd = exec.Command(serverBin, "doctor", "--gemini", "gemini")
	cmd.Env = bare
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "npm install -g @google/gemini-cli") ||
		!strings.Contains(string(out), "no Gemini credentials") || !strings.Contains(string(out), "sessionRetention") {
		t.Fatalf("broken doctor: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
}
