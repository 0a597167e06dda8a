package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The tests of this file run the server binary on the API backend as an
// MCP host: it talks to the fake Gemini API, whose model calls the tools
// of downstream servers (internal/geminitest/mcpdown) named in
// --mcp-config, and a go-sdk client drives it over stdio or HTTP.

var (
	mcpdownOnce    sync.Once
	mcpdownBin     string
	mcpdownErr     error
	mcpdownCleanup = func() {}
)

// mcpdown builds the downstream test server once, the first time a test
// asks for it; TestMain removes it ([removeMCPDown]).
func mcpdown(t *testing.T) string {
	t.Helper()
	mcpdownOnce.Do(func() {
		var cleanup func()
		mcpdownBin, cleanup, mcpdownErr = geminitest.BuildMCPDown()
		if mcpdownErr == nil {
			mcpdownCleanup = cleanup
		}
	})
	if mcpdownErr != nil {
		t.Fatal(mcpdownErr)
	}
	return mcpdownBin
}

// removeMCPDown removes the downstream test server, once no test runs.
func removeMCPDown() { mcpdownCleanup() }

// logWatch is a process's stderr that tests wait on, line by line.
type logWatch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
	return w.buf.Write(p)
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// count is the number of complete lines that hold every one of parts.
func (w *logWatch) count(parts ...string) int {
	n := 0
	for line := range strings.Lines(w.String()) {
		if !strings.HasSuffix(line, "\n") {
			break
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// wait waits until n lines hold every one of parts. The minute is a
// last-resort guard against a test that would hang, never waited on when
// the test passes.
func (w *logWatch) wait(t *testing.T, n int, parts ...string) {
	t.Helper()
	guard := time.After(time.Minute)
	for {
		w.mu.Lock()
		ch := w.changed
		w.mu.Unlock()
		if w.count(parts...) >= n {
			return
		}
		select {
		case <-ch:
		case <-guard:
			t.Fatalf("no %d line(s) with %q on the server's stderr", n, parts)
		}
	}
}

// hostEnv is a fake Gemini API and an --mcp-config for the server.
type hostEnv struct {
	api    *fakeapi.Server
	vars   []string
	dir    string
	config string
	stderr *logWatch
}

// newHostEnv writes servers as the mcpServers of a new configuration.
func newHostEnv(t *testing.T, servers map[string]any) *hostEnv {
	t.Helper()
	h := &hostEnv{api: fakeapi.New(), dir: t.TempDir(), stderr: newLogWatch()}
	t.Cleanup(h.api.Close)
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	h.config = filepath.Join(h.dir, "mcp.json")
	if err := os.WriteFile(h.config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h.vars = append(os.Environ(),
		"HOME="+filepath.Join(h.dir, "home"),
		"GEMINI_MCP_STATE_DIR="+filepath.Join(h.dir, "state"),
		"GEMINI_API_KEY=test-key",
		"GOOGLE_GEMINI_BASE_URL="+h.api.URL(),
	)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

// down is the configuration of a stdio mcpdown server.
func down(t *testing.T, extra map[string]any, args ...string) map[string]any {
	c := map[string]any{"command": mcpdown(t), "args": append([]string{"-self-timeout", "5m"}, args...)}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func (h *hostEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(serverBin, append([]string{"--backend", "api", "--mcp-config", h.config, "--log-level", "debug"}, args...)...)
	cmd.Env = h.vars
	cmd.Dir = h.dir
	cmd.Stderr = h.stderr
	return cmd
}

// connected waits until the server has connected to each named
// downstream server.
func (h *hostEnv) connected(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		h.stderr.wait(t, 1, `msg="MCP server connected"`, "mcp_server="+n+" ")
	}
}

// stdio starts the server over stdio and connects a client to it with
// opts, speaking protocol ("" for the client's default).
func (h *hostEnv) stdio(t *testing.T, opts *mcp.ClientOptions, protocol string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host-test", Version: "1"}, opts).
		Connect(context.Background(), &mcp.CommandTransport{Command: h.command()}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if protocol != "" && cs.InitializeResult().ProtocolVersion != protocol {
		t.Fatalf("negotiated %s, want %s", cs.InitializeResult().ProtocolVersion, protocol)
	}
	return cs
}

var listenRE = regexp.MustCompile(`msg="serving MCP over HTTP" addr=(\S+)`)

// serve starts the server over HTTP on a loopback port and returns its
// address.
func (h *hostEnv) serve(t *testing.T, args ...string) string {
	t.Helper()
	cmd := h.command(append([]string{"--http", "127.0.0.1:0"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	h.stderr.wait(t, 1, `msg="serving MCP over HTTP"`)
	return listenRE.FindStringSubmatch(h.stderr.String())[1]
}

// mcpList runs `gemini-mcp-server mcp list` on the host's configuration,
// with env added to its environment and args after its own, and returns
// what it printed; it must exit 0.
func (h *hostEnv) mcpList(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(serverBin, append([]string{"mcp", "list", "--mcp-config", h.config}, args...)...)
	cmd.Env = append(slices.Clip(h.vars), env...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, h.stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcp list: %v\n%s", err, stdout.String())
	}
	return stdout.String()
}

// http starts the server over HTTP on a loopback port and connects a
// client to it with opts, speaking protocol ("" for the client's default).
func (h *hostEnv) http(t *testing.T, opts *mcp.ClientOptions, protocol string, args ...string) *mcp.ClientSession {
	t.Helper()
	addr := h.serve(t, args...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host-test", Version: "1"}, opts).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if protocol != "" && cs.InitializeResult().ProtocolVersion != protocol {
		t.Fatalf("negotiated %s, want %s", cs.InitializeResult().ProtocolVersion, protocol)
	}
	return cs
}

// guardCtx bounds a call as a last resort; the tests never wait it out.
func guardCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// chat calls chat with prompt and returns the answer's text and session.
func chat(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (text, session string) {
	t.Helper()
	res, err := cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("%s failed: %+v", tool, res)
	}
	id, _ := res.Meta["sessionId"].(string)
	return res.Content[0].(*mcp.TextContent).Text, id
}

// results are the function responses the fake API received for the turn
// whose prompt was prompt.
func (h *hostEnv) results(prompt string) []fakeapi.FunctionResponse {
	var out []fakeapi.FunctionResponse
	for _, r := range h.api.Requests() {
		if r.Method == fakeapi.MethodStream && r.Prompt == prompt {
			out = append(out, r.FunctionResponses...)
		}
	}
	return out
}

// downHTTP starts mcpdown over transport ("http" or "sse") and returns
// its URL and its stderr; the process is killed when the test ends.
func downHTTP(t *testing.T, transport string, args ...string) (string, *logWatch) {
	t.Helper()
	cmd := exec.Command(mcpdown(t), append([]string{"-transport", transport, "-self-timeout", "5m"}, args...)...)
	stderr := newLogWatch()
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "url ")
	if err != nil || !ok {
		t.Fatalf("mcpdown -transport %s said %q: %v", transport, line, err)
	}
	return url, stderr
}

// TestHostCallsDownstreamTool: Gemini calls a downstream tool, declared to
// it as mcp_<server>_<tool>; the server runs it and sends the result back
// as a functionResponse, and the answer holds it; for a client over stdio
// and HTTP, and a downstream server over stdio, Streamable HTTP and SSE.
func TestHostCallsDownstreamTool(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ upstream, downstream string }{
		{"stdio", "stdio"}, {"http", "stdio"}, {"stdio", "http"}, {"stdio", "sse"},
	} {
		t.Run(c.upstream+"/"+c.downstream, func(t *testing.T) {
			cfg := down(t, map[string]any{"trust": true}, "-tool", "echo")
			switch c.downstream {
			case "http":
				url, _ := downHTTP(t, "http", "-tool", "echo")
				cfg = map[string]any{"httpUrl": url, "trust": true}
			case "sse":
				url, _ := downHTTP(t, "sse", "-tool", "echo")
				cfg = map[string]any{"url": url, "type": "sse", "trust": true}
			}
			h := newHostEnv(t, map[string]any{"down": cfg})
			var cs *mcp.ClientSession
			if c.upstream == "stdio" {
				cs = h.stdio(t, nil, "")
			} else {
				cs = h.http(t, nil, "")
			}
			h.connected(t, "down")
			prompt := `[[call:mcp_down_echo:{"text":"hello tools"}]]`
			text, _ := chat(t, cs, "chat", map[string]any{"prompt": prompt})
			if !strings.Contains(text, "mcp_down_echo returned") || !strings.Contains(text, `echo {\"text\":\"hello tools\"}`) {
				t.Errorf("answer %q does not hold the tool's result", text)
			}
			var reqs []fakeapi.Request
			for _, r := range h.api.Requests() {
				if r.Method == fakeapi.MethodStream {
					reqs = append(reqs, r)
				}
			}
			if len(reqs) != 2 || len(reqs[0].Tools) != 1 || reqs[0].Tools[0] != "mcp_down_echo" {
				t.Fatalf("requests %+v: want the tool mcp_down_echo declared, then its result", reqs)
			}
			fr := reqs[1].FunctionResponses
			if len(fr) != 1 || fr[0].Name != "mcp_down_echo" || !strings.Contains(string(fr[0].Response), `echo {\"text\":\"hello tools\"}`) {
				t.Errorf("function responses %s", fmtResponses(fr))
			}
		})
	}
}

func fmtResponses(fr []fakeapi.FunctionResponse) string {
	b, _ := json.Marshal(fr)
	return string(b)
}

// TestMCPListDeadAndGood: `mcp list` shows a good server connected with
// its tools, and a server whose command does not exist and one that
// never answers initialize as failed with their reasons; it exits 0.
func TestMCPListDeadAndGood(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{
		"good": down(t, map[string]any{"timeout": 30000}, "-tool", "echo"),
		"gone": map[string]any{"command": filepath.Join(t.TempDir(), "no-such-server")},
		"mute": down(t, map[string]any{"timeout": 1000}, "-no-initialize"),
	})
	out := h.mcpList(t, nil)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^✓ good: .*mcpdown .*\(stdio\) - Connected\n    mcp_good_echo \(echo\)$`),
		regexp.MustCompile(`(?m)^✗ gone: .*no-such-server \(stdio\) - Failed\n    reason: .*no such file or directory`),
		regexp.MustCompile(`(?m)^✗ mute: .*mcpdown .*\(stdio\) - Failed\n    reason: no answer to initialize within 1s \(mcpServers\.mute\.timeout\)`),
	} {
		if !want.MatchString(out) {
			t.Errorf("mcp list output does not match %s:\n%s", want, out)

		}
	}
}

// TestHostProgressAndResource: each tool call is reported as progress to
// a client that asked for it, and the mcp-servers resource shows the
// server connected with its tool.
func TestHostProgressAndResource(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-tool", "echo")})
	var mu sync.Mutex
	var messages []string
	called := make(chan struct{})
	var once sync.Once
	cs := h.stdio(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		messages = append(messages, req.Params.Message)
		if strings.Contains(req.Params.Message, "calling mcp_down_echo") {
			once.Do(func() { close(called) })
		}
	}}, "")
	h.connected(t, "down")
	res, err := cs.ReadResource(guardCtx(t), &mcp.ReadResourceParams{URI: "gemini-mcp://mcp-servers"})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Contents[0].Text; !strings.Contains(text, `"connected"`) || !strings.Contains(text, "mcp_down_echo") {
		t.Errorf("the mcp-servers resource:\n%s", text)
	}
	params := &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": `[[call:mcp_down_echo:{"text":"p"}]]`}}
	params.SetProgressToken("tok")
	r, err := cs.CallTool(guardCtx(t), params)
	if err != nil || r.IsError {
		t.Fatalf("chat: %v %+v", err, r)
	}
	select {
	case <-called:
	case <-guardCtx(t).Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no progress message names the call: %q", messages)
	}
}

// TestHostToolListChanged: a downstream server that adds a tool and says
// so has that tool declared to Gemini in the next turn.
func TestHostToolListChanged(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-grow", "grow")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	text, _ := chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_down_grow:{}]]`})
	if !strings.Contains(text, "added_1") {
		t.Fatalf("answer %q", text)
	}
	h.stderr.wait(t, 1, `msg="MCP server's tools changed"`, "mcp_server=down ", "tools=2")
	text, _ = chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_down_added_1:{"text":"new"}]]`})
	if !strings.Contains(text, `added_1 {\"text\":\"new\"}`) {
		t.Errorf("answer %q", text)
	}
}

// TestHostSanitizedNames: a server and a tool whose names hold spaces are
// declared and called under the sanitized name.
func TestHostSanitizedNames(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"my server": down(t, map[string]any{"trust": true}, "-tool", "get thing")})
	cs := h.stdio(t, nil, "")
	h.stderr.wait(t, 1, `msg="MCP server connected"`, `mcp_server="my server"`)
	text, _ := chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_my_server_get_thing:{"text":"s"}]]`})
	if !strings.Contains(text, `get thing {\"text\":\"s\"}`) {
		t.Errorf("answer %q", text)
	}
}

// TestHostSendsStampedVersion: the MCP host introduces itself to a
// downstream server with the version stamped into the binary (the one
// --version prints), in `mcp list` as in the server.
func TestHostSendsStampedVersion(t *testing.T) {
	t.Parallel()
	clients := filepath.Join(t.TempDir(), "clients")
	h := newHostEnv(t, map[string]any{"down": down(t, nil, "-tool", "echo", "-client-file", clients)})
	if out := h.mcpList(t, nil, "--log-level", "debug"); !strings.Contains(out, "down") {
		t.Fatalf("mcp list:\n%s", out)
	}
	got, err := os.ReadFile(clients)
	if err != nil {
		t.Fatalf("the downstream server recorded no initialize: %v\n%s", err, h.stderr.String())
	}
	if want := "server/discover gemini-mcp-server " + testVersion + "\n"; string(got) != want {
		t.Errorf("the downstream server saw the client %q, want %q", got, want)
	}
}
