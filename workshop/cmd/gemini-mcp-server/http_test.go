package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

var addrRE = regexp.MustCompile(`msg="serving MCP over HTTP" addr=(\S+)`)

// startHTTP starts the binary with --http on a free loopback port and
// returns its address once it listens.
func startHTTP(t testing.TB, e *env, args ...string) (addr string, stop func() error) {
	t.Helper()
	addr, stop, _ = startHTTPCmd(t, e.command(append([]string{"--http", "127.0.0.1:0"}, args...)...))
	return addr, stop
}

// startHTTPCmd starts cmd, a server with --http on port 0, and returns its
// address once it listens, and its stderr so far.
func startHTTPCmd(t testing.TB, cmd *exec.Cmd) (addr string, stop func() error, stderrLog *geminitest.LockedBuffer) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	var all geminitest.LockedBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", all.String())
		}
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			all.Write([]byte(sc.Text() + "\n"))
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	timeout := time.After(60 * time.Second)
	for addr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatal("server exited before listening")
			}
			if m := addrRE.FindStringSubmatch(l); m != nil {
				addr = m[1]
			}
		case <-timeout:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("server did not report its address")
		}
	}
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		return cmd.Wait()
	}
	t.Cleanup(func() { stop() })
	return addr, stop, &all
}

func TestHTTPBinary(t *testing.T) {
	e := newEnv(t)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokenFile, []byte("# team tokens\nfirst-token-0123456789\n\nsecond-token-0123456789\n"), 0o600)
	addr, stop := startHTTP(t, e, "--token-file", tokenFile)

	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"version":"v9.8.7-test"`) {
		t.Fatalf("healthz %s", body)
	}
	client := &http.Client{Transport: authTransport("second-token-0123456789")}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bin-http", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "hello over http"}})
	if err != nil || res.IsError || res.Meta["sessionId"] == nil {
		t.Fatalf("chat: %v %+v", err, res)
	}
	cs.Close()
	// A connection that never carries a request, as HTTP clients keep
	// spare ones, must not hold the shutdown. The listener accepts in
	// order, so once a later connection is answered this one is accepted.
	spare, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := fresh.Get("http://" + addr + "/healthz"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
}

type authTransport string

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(a))
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPRefusesOpenRemoteBind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.command("--http", "0.0.0.0:0")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "without authentication") {
		t.Fatalf("exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
	cmd = e.command("--http", "127.0.0.1:0", "--token-file", filepath.Join(t.TempDir(), "missing"))
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "--token-file") {
		t.Fatalf("missing token file: exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
	// A blank token list must not turn auth off.
	cmd = e.command("--http", "127.0.0.1:0")
	cmd.Env = append(cmd.Env, "GEMINI_MCP_TOKENS= , ")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "GEMINI_MCP_TOKENS holds no token") {
		t.Fatalf("blank GEMINI_MCP_TOKENS: exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
}

// TestHTTPSignalStopsRunningCall sends SIGTERM while a one-shot call runs
// over HTTP: the server must cancel the call, reap the CLI (which ignores
// SIGTERM) and its child, remove the call's temp files, answer the client
// and exit 0, within 5 s of the signal.
func TestHTTPSignalStopsRunningCall(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process checks use /proc")
	}
	e := newEnv(t)
	tmp := t.TempDir()
	e.vars = append(e.vars, "TMPDIR="+tmp)
	addr, stop := startHTTP(t, e)
	// Raw JSON-RPC, without the SDK client's standalone stream, whose end
	// at shutdown the SDK client may report before the call's answer.
	url := "http://" + addr + "/mcp"
	session := ""
	post := func(body string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		return http.DefaultClient.Do(req)
	}
	resp, err := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if session = resp.Header.Get("Mcp-Session-Id"); session == "" {
		t.Fatalf("initialize: %s, no session", resp.Status)
	}
	if resp, err = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	type answer struct {
		body string
		err  error
	}
	answers := make(chan answer, 1)
	go func() {
		resp, err := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"[[ignoreterm]] [[child]]","systemPrompt":"S"}}}`)
		if err != nil {
			answers <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		answers <- answer{string(body), err}
	}()
	inv := geminitest.WaitInvocation(t, e.log, 10*time.Second, geminitest.HasChild)
	start := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- stop() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("server still running 5 s after SIGTERM")
	}
	t.Logf("server exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	for _, pid := range []int{inv.Pid, inv.ChildPid} {
		if geminitest.Alive(pid) {
			t.Errorf("pid %d outlived the server", pid)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "gemini-mcp-*")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
	a := <-answers
	if a.err != nil || !strings.Contains(a.body, `"id":2`) || !strings.Contains(a.body, `"isError":true`) || !strings.Contains(a.body, "cancelled") {
		t.Fatalf("the client got no cancelled answer: %v %q", a.err, a.body)
	}
}

// TestHTTPLargestPromptFitsTheBody sends a prompt and a system prompt of
// --max-prompt-bytes control characters each, which JSON escapes six
// times over: the default --max-body-bytes must let the call through.
func TestHTTPLargestPromptFitsTheBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const maxPrompt = 512 << 10
	addr, _ := startHTTP(t, e, "--max-prompt-bytes", "512KiB")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bin-http", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	prompt := strings.Repeat("\x01", maxPrompt)
	// The package's guard against a hang: a megabyte of prompts, escaped
	// six times over, takes a -race server on a busy machine over 30 s.
	res, err := cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": prompt, "systemPrompt": prompt}})
	if err != nil || res.IsError {
		t.Fatalf("a call at --max-prompt-bytes: %v %+v", err, res)
	}
	if inv, _ := geminitest.ReadLog(e.log); len(inv) != 1 {
		t.Fatalf("%d CLI runs, want 1", len(inv))
	}
}
