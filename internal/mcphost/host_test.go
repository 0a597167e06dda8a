package mcphost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
)

var mcpdown string

func TestMain(m *testing.M) {
	path, cleanup, err := geminitest.BuildMCPDown()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mcpdown = path
	code := m.Run()
	cleanup()
	if code == 0 {
		if err := leaktest.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// startHost starts a host on servers, with a short backoff so that a
// reconnect happens within the test, and closes it when the test ends.
func startHost(t *testing.T, servers ...ServerConfig) (*Host, *geminitest.LockedBuffer) {
	t.Helper()
	logs := &geminitest.LockedBuffer{}
	h := New(&Config{Servers: servers}, Options{
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Backoff: func(int) time.Duration { return 20 * time.Millisecond },
	})
	t.Cleanup(h.Close)
	return h, logs
}

// waitStatus waits until ok holds for the host's status.
func waitStatus(t *testing.T, h *Host, what string, ok func(map[string]ServerStatus) bool) map[string]ServerStatus {
	t.Helper()
	ctx := geminitest.Context(t)
	for {
		ch := h.Changed()
		byName := map[string]ServerStatus{}
		for _, s := range h.Status() {
			byName[s.Name] = s
		}
		if ok(byName) {
			return byName
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: status %+v", what, h.Status())
		}
	}
}

func stateIs(name string, state State) func(map[string]ServerStatus) bool {
	return func(m map[string]ServerStatus) bool { return m[name].State == state }
}

func stdio(name string, args ...string) ServerConfig {
	return ServerConfig{Name: name, Command: mcpdown, Args: append([]string{"-self-timeout", "1m"}, args...)}
}

// startRemote starts mcpdown over HTTP or SSE and returns its URL.
func startRemote(t *testing.T, transport string, args ...string) string {
	t.Helper()
	cmd := exec.Command(mcpdown, append([]string{"-transport", transport, "-self-timeout", "1m"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "url ") {
		t.Fatalf("mcpdown printed %q, %v", line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "url "))
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("empty result %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return tc.Text
}

func declared(h *Host) []string {
	var names []string
	for _, t := range h.Tools() {
		names = append(names, t.Name)
	}
	return names
}

func TestHostStdioNamesAndCalls(t *testing.T) {
	long := "a_tool_name_of_sixty_five_characters_" + strings.Repeat("x", 28)
	if len(long) != 65 {
		t.Fatalf("len %d", len(long))
	}
	one := stdio("down one", "-tool", "echo", "-tool", "tool.with.dots", "-tool", long, "-tool", "hidden", "-ref-tool", "point")
	one.ExcludeTools = []string{"hidden"}
	one.Trust = true
	two := stdio("two", "-tool", "echo")
	h, _ := startHost(t, one, two)
	waitStatus(t, h, "both connected", func(m map[string]ServerStatus) bool {
		return m["down one"].State == StateConnected && m["two"].State == StateConnected
	})
	want := []string{
		"mcp_down_one_echo",
		"mcp_down_one_tool.with.dots",
		ToolName("down one", long),
		"mcp_down_one_point",
		"mcp_two_echo",
	}
	got := declared(h)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("declared %q, want %q", got, want)
	}
	if n := ToolName("down one", long); len(n) != 63 || !strings.Contains(n, "...") {
		t.Errorf("long name %q", n)
	}
	for _, tool := range h.Tools() {
		if tool.Name == "mcp_down_one_point" && strings.Contains(fmt.Sprint(tool.Schema), "$ref") {
			t.Errorf("schema with $ref: %v", tool.Schema)
		}
		if tool.Trusted != (tool.Server == "down one") {
			t.Errorf("%s trusted %v", tool.Name, tool.Trusted)
		}
	}
	ctx := geminitest.Context(t)
	res, err := h.Call(ctx, "mcp_two_echo", map[string]any{"text": "hi"})
	if err != nil || text(t, res) != `echo {"text":"hi"}` {
		t.Fatalf("call: %v %+v", err, res)
	}
	res, err = h.Call(ctx, ToolName("down one", long), nil)
	if err != nil || text(t, res) != long+" {}" {
		t.Fatalf("long call: %v %+v", err, res)
	}
	if _, err := h.Call(ctx, "mcp_down_one_hidden", nil); err == nil || !strings.Contains(err.Error(), "no MCP tool is declared") {
		t.Errorf("an excluded tool must not be callable: %v", err)
	}
	st := waitStatus(t, h, "status", stateIs("down one", StateConnected))["down one"]
	if len(st.Skipped) != 1 || st.Skipped[0].Tool != "hidden" || st.Transport != TransportStdio {
		t.Errorf("status %+v", st)
	}
}

func TestHostRemoteTransports(t *testing.T) {
	httpURL := startRemote(t, "http", "-tool", "echo")
	sseURL := startRemote(t, "sse", "-tool", "echo")
	h, _ := startHost(t,
		ServerConfig{Name: "streamable", URL: httpURL},
		ServerConfig{Name: "legacy", HTTPURL: httpURL},
		ServerConfig{Name: "sse", URL: sseURL, Type: TransportSSE},
		ServerConfig{Name: "fallback", URL: sseURL, Headers: map[string]string{"X-Test": "1"}},
	)
	st := waitStatus(t, h, "all connected", func(m map[string]ServerStatus) bool {
		for _, s := range m {
			if s.State != StateConnected {
				return false
			}
		}
		return len(m) == 4
	})
	for name, transport := range map[string]string{"streamable": "http", "legacy": "http", "sse": "sse", "fallback": "sse"} {
		if st[name].Transport != transport {
			t.Errorf("%s: transport %s, want %s", name, st[name].Transport, transport)
		}
		res, err := h.Call(geminitest.Context(t), "mcp_"+name+"_echo", map[string]any{"n": 1})
		if err != nil || text(t, res) != `echo {"n":1}` {
			t.Errorf("%s: %v %+v\n%+v", name, err, res, h.Status())
		}
	}
}

func TestHostDeadServers(t *testing.T) {
	h, _ := startHost(t,
		ServerConfig{Name: "nocmd", Command: filepath.Join(t.TempDir(), "no-such-server")},
		ServerConfig{Name: "noport", URL: "http://127.0.0.1:1/mcp", Timeout: 5 * time.Second},
		stdio("ok", "-tool", "echo"),
	)
	st := waitStatus(t, h, "dead servers failed, the other connected", func(m map[string]ServerStatus) bool {
		return m["nocmd"].State == StateFailed && m["noport"].State == StateFailed && m["ok"].State == StateConnected
	})
	if !strings.Contains(st["nocmd"].Reason, "no-such-server") || !strings.Contains(st["noport"].Reason, "127.0.0.1:1") {
		t.Errorf("reasons %q / %q", st["nocmd"].Reason, st["noport"].Reason)
	}
	if got := declared(h); !slices.Equal(got, []string{"mcp_ok_echo"}) {
		t.Errorf("declared %q", got)
	}
	if err := h.WaitSettled(geminitest.Context(t)); err != nil {
		t.Fatal(err)
	}
}

func TestHostHangingServerAndTool(t *testing.T) {
	pids := t.TempDir()
	hangInit := stdio("mute", "-no-initialize", "-pid-dir", pids)
	hangInit.Timeout = 300 * time.Millisecond
	hangTool := stdio("slow", "-hang", "wait", "-tool", "echo")
	hangTool.Timeout = 500 * time.Millisecond
	h, logs := startHost(t, hangInit, hangTool)
	st := waitStatus(t, h, "mute failed, slow connected", func(m map[string]ServerStatus) bool {
		return m["mute"].State == StateFailed && m["slow"].State == StateConnected
	})
	if !strings.Contains(st["mute"].Reason, "no answer to initialize within 300ms (mcpServers.mute.timeout)") {
		t.Errorf("reason %q", st["mute"].Reason)
	}
	ctx := geminitest.Context(t)
	_, err := h.Call(ctx, "mcp_slow_wait", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer within 500ms") {
		t.Fatalf("hanging tool: %v", err)
	}
	// Cancelling the caller ends the call at once and is told apart from
	// the timeout.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		logs.WaitFor(ctx, "mcpdown: hanging in tool")
		cancel()
	}()
	if _, err := h.Call(cctx, "mcp_slow_wait", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	// The cancellation reaches the server (notifications/cancelled).
	if !logs.WaitFor(ctx, "mcpdown: hanging tool cancelled") {
		t.Fatalf("the server never saw the cancellation:\n%s", logs.String())
	}
	// The server still answers after both.
	if res, err := h.Call(ctx, "mcp_slow_echo", nil); err != nil || text(t, res) != "echo {}" {
		t.Fatalf("echo after: %v", err)
	}
	h.Close()
	for _, p := range pidsIn(t, pids) {
		if geminitest.Alive(p) {
			t.Errorf("process %d of the hanging server outlived Close", p)
		}
	}
}

func TestHostCrashMidCallReconnects(t *testing.T) {
	h, _ := startHost(t, stdio("fragile", "-crash", "boom", "-tool", "echo"))
	waitStatus(t, h, "connected", stateIs("fragile", StateConnected))
	ctx := geminitest.Context(t)
	_, err := h.Call(ctx, "mcp_fragile_boom", nil)
	if err == nil {
		t.Fatal("a crash mid-call must be an error")
	}
	waitStatus(t, h, "lost", func(m map[string]ServerStatus) bool {
		return m["fragile"].State == StateFailed && strings.Contains(m["fragile"].Reason, "connection lost")
	})
	waitStatus(t, h, "reconnected", stateIs("fragile", StateConnected))
	if res, err := h.Call(ctx, "mcp_fragile_echo", nil); err != nil || text(t, res) != "echo {}" {
		t.Fatalf("after reconnecting: %v", err)
	}
}

func TestHostToolListChanged(t *testing.T) {
	h, _ := startHost(t, stdio("grower", "-grow", "grow"))
	waitStatus(t, h, "connected", stateIs("grower", StateConnected))
	ctx := geminitest.Context(t)
	if _, err := h.Call(ctx, "mcp_grower_grow", nil); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h, "the new tool", func(m map[string]ServerStatus) bool {
		return slices.ContainsFunc(m["grower"].Tools, func(ts ToolStatus) bool { return ts.Name == "mcp_grower_added_1" })
	})
	if res, err := h.Call(ctx, "mcp_grower_added_1", map[string]any{"x": "y"}); err != nil || text(t, res) != `added_1 {"x":"y"}` {
		t.Fatalf("new tool: %v", err)
	}
}

func TestHostCloseEndsProcessGroup(t *testing.T) {
	pids := t.TempDir()
	h, _ := startHost(t, stdio("parent", "-child", "-pid-dir", pids, "-tool", "echo"))
	waitStatus(t, h, "connected", stateIs("parent", StateConnected))
	// mcpdown writes its own pid file before connecting, its child's
	// before it sleeps; wait for both on the directory (no event exists).
	ctx := geminitest.Context(t)
	for len(pidsIn(t, pids)) < 2 {
		select {
		case <-ctx.Done():
			t.Fatalf("pids %v", pidsIn(t, pids))
		case <-time.After(10 * time.Millisecond):
		}
	}
	h.Close()
	for _, p := range pidsIn(t, pids) {
		// The child is reparented when its parent dies; it must be gone
		// or a zombie (Alive says false for both).
		for geminitest.Alive(p) {
			select {
			case <-ctx.Done():
				t.Fatalf("process %d outlived Close", p)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

func pidsIn(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		if p, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "pid-")); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func TestServerEnvRedactsSecrets(t *testing.T) {
	env := serverEnv([]string{"PATH=/bin", "GEMINI_API_KEY=k", "MY_TOKEN=t", "HOME=/h", "PLAIN=ok", "URL=https://u:p@h/", "GIT_CONFIG_KEY_0=x",
		"GEMINI_MCP_STORE=redis://:pw@127.0.0.1:6379/0", "STORE_COPY=redis://:pw@127.0.0.1:6379/0", "OTHER=has the known-secret-value in it"},
		map[string]string{"MY_TOKEN": "given"}, redact.New("known-secret-value"))
	slices.Sort(env)
	want := []string{"GIT_CONFIG_KEY_0=x", "HOME=/h", "MY_TOKEN=given", "PATH=/bin", "PLAIN=ok"}
	if !slices.Equal(env, want) {
		t.Errorf("env %q, want %q", env, want)
	}
}

func TestHostRemoteCrashMidCall(t *testing.T) {
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			url := startRemote(t, transport, "-crash", "boom")
			cfg := ServerConfig{Name: "remote", URL: url, Type: transport}
			h, _ := startHost(t, cfg)
			waitStatus(t, h, "connected", stateIs("remote", StateConnected))
			if _, err := h.Call(geminitest.Context(t), "mcp_remote_boom", nil); err == nil {
				t.Fatal("a crash mid-call must be an error")
			}
			// The server is gone for good: the host says so, with the
			// reason, and keeps trying.
			st := waitStatus(t, h, "failed", stateIs("remote", StateFailed))
			if st["remote"].Reason == "" || len(h.Tools()) != 0 {
				t.Errorf("status %+v, tools %v", st["remote"], h.Tools())
			}
			// Streamable HTTP: the SDK's session would end only after its
			// retries (seconds); the failed call has the host check at once.
			if transport == "http" && !strings.Contains(st["remote"].Reason, "no answer to ping after a failed call") {
				t.Errorf("reason %q", st["remote"].Reason)
			}
		})
	}
}

// TestFailedServerStaysFailedWhileRetried: a server that failed is shown
// failed, with its reason, while the host tries it again, not as
// connecting: mcp list and the status resource then say what is wrong.
func TestFailedServerStaysFailedWhileRetried(t *testing.T) {
	// A server that accepts connections and never answers: each attempt
	// ends at the server's timeout, and each starts with an accept.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})
	h, _ := startHost(t, ServerConfig{Name: "mute", HTTPURL: "http://" + ln.Addr().String() + "/mcp", Timeout: 200 * time.Millisecond})
	st := waitStatus(t, h, "the first attempt failed", func(m map[string]ServerStatus) bool { return m["mute"].State == StateFailed })
	reason := st["mute"].Reason
	// Every connection of the first attempt has arrived by now; the next
	// one belongs to a later attempt, which runs once the backoff has
	// passed.
	ctx := geminitest.Context(t)
	for first := len(accepted); first >= 0; first-- {
		select {
		case c := <-accepted:
			t.Cleanup(func() { c.Close() })
		case <-ctx.Done():
			t.Fatal("the host did not try the server again")
		}
	}
	for _, s := range h.Status() {
		if s.Name == "mute" && (s.State != StateFailed || s.Reason == "") {
			t.Fatalf("while tried again: %s (%q), want failed with the reason of the last failure (%q)", s.State, s.Reason, reason)
		}
	}
}
