package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
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

// TestHostParallelCalls: two calls in one answer run at the same time:
// the downstream tool answers only once both calls are running.
func TestHostParallelCalls(t *testing.T) {
	// Calls run one after the other would wait for each other until the
	// server's timeout cuts the first.
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true, "timeout": 30000}, "-meet", "meet", "-meet-n", "2")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	prompt := `[[call:mcp_down_meet:{"text":"a"}]] [[call:mcp_down_meet:{"text":"b"}]]`
	text, _ := chat(t, cs, "chat", map[string]any{"prompt": prompt})
	fr := h.results(prompt)
	if len(fr) != 2 {
		t.Fatalf("function responses %s", fmtResponses(fr))
	}
	for i, want := range []string{`met 2 {\"text\":\"a\"}`, `met 2 {\"text\":\"b\"}`} {
		if !strings.Contains(string(fr[i].Response), want) || !strings.Contains(text, want) {
			t.Errorf("result %d: %s, answer %q: want %s", i, fr[i].Response, text, want)
		}
	}
}

// TestHostToolTimeout: a tool that never answers is cut at its server's
// timeout; Gemini gets the error, the turn answers, and the downstream
// call is cancelled.
func TestHostToolTimeout(t *testing.T) {
	h := newHostEnv(t, map[string]any{"slow": down(t, map[string]any{"trust": true, "timeout": 3000}, "-hang", "stall")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "slow")
	prompt := `[[call:mcp_slow_stall:{}]]`
	text, _ := chat(t, cs, "chat", map[string]any{"prompt": prompt})
	fr := h.results(prompt)
	if len(fr) != 1 || !strings.Contains(string(fr[0].Response), `"error"`) || !strings.Contains(string(fr[0].Response), "did not answer within 3s") {
		t.Fatalf("function responses %s", fmtResponses(fr))
	}
	if !strings.Contains(text, "mcp_slow_stall returned") {
		t.Errorf("answer %q", text)
	}
	h.stderr.wait(t, 1, "mcpdown: hanging tool cancelled")
}

// TestHostConfirmsThroughElicitation: a tool of an untrusted server runs
// once the client's user allows it, and is refused when the user
// declines, under both protocol generations: elicitation/create up to
// 2025-11-25, the multi-round-trip flow of 2026-07-28 (the go-sdk
// client's default, which runs the flow by itself); over stdio, and over
// HTTP with sessions (where the go-sdk client speaks 2025-11-25) and
// without (2026-07-28).
func TestHostConfirmsThroughElicitation(t *testing.T) {
	for _, tp := range []string{"stdio/2025-11-25", "stdio/2026-07-28", "http/2025-11-25", "stateless/2026-07-28"} {
		transport, protocol, _ := strings.Cut(tp, "/")
		for _, c := range []struct {
			name   string
			answer *mcp.ElicitResult
			says   string
		}{
			{"allows", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, `query {\"sql\":\"select 1\"}`},
			{"declines", &mcp.ElicitResult{Action: "decline"}, "the user declined this call"},
		} {
			t.Run(tp+"/"+c.name, func(t *testing.T) {
				h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
				var mu sync.Mutex
				var asked []string
				opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, req.Params.Message)
					return c.answer, nil
				}}
				var cs *mcp.ClientSession
				if transport == "stdio" {
					cs = h.stdio(t, opts, protocol)
				} else if transport == "http" {
					cs = h.http(t, opts, protocol)
				} else {
					cs = h.http(t, opts, protocol, "--stateless")
				}
				h.connected(t, "db")
				prompt := `[[call:mcp_db_query:{"sql":"select 1"}]]`
				text, _ := chat(t, cs, "chat", map[string]any{"prompt": prompt})
				fr := h.results(prompt)
				if len(fr) != 1 || !strings.Contains(string(fr[0].Response), c.says) {
					t.Fatalf("function responses %s, want %q", fmtResponses(fr), c.says)
				}
				if c.name == "declines" && strings.Contains(string(fr[0].Response), "query {") {
					t.Errorf("the declined call ran: %s", fr[0].Response)
				}
				if !strings.Contains(text, "mcp_db_query returned") {
					t.Errorf("answer %q", text)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(asked) != 1 || !strings.Contains(asked[0], "query") {
					t.Errorf("asked %q, want once about query", asked)
				}
			})
		}
	}
}

// TestHostCancelReachesDownstream: cancelling the chat call while a
// downstream tool runs cancels that tool's call on its server; for a
// client over stdio and HTTP, and a downstream server over stdio (whose
// stderr the server logs) and Streamable HTTP.
func TestHostCancelReachesDownstream(t *testing.T) {
	for _, c := range []struct{ upstream, downstream string }{
		{"stdio", "stdio"}, {"http", "stdio"}, {"stdio", "http"},
	} {
		t.Run(c.upstream+"/"+c.downstream, func(t *testing.T) {
			args := []string{"-hang", "stall", "-tool", "echo"}
			cfg := down(t, map[string]any{"trust": true}, args...)
			var downLog *logWatch
			if c.downstream == "http" {
				var url string
				url, downLog = downHTTP(t, "http", args...)
				cfg = map[string]any{"httpUrl": url, "trust": true}
			}
			h := newHostEnv(t, map[string]any{"down": cfg})
			if downLog == nil {
				downLog = h.stderr
			}
			var cs *mcp.ClientSession
			if c.upstream == "stdio" {
				cs = h.stdio(t, nil, "")
			} else {
				cs = h.http(t, nil, "")
			}
			h.connected(t, "down")
			ctx, cancel := context.WithCancel(guardCtx(t))
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": `[[call:mcp_down_stall:{}]]`}})
				done <- err
			}()
			downLog.wait(t, 1, "mcpdown: hanging in tool")
			cancel()
			if err := <-done; err == nil {
				t.Error("the cancelled call succeeded")
			}
			downLog.wait(t, 1, "mcpdown: hanging tool cancelled")
			// The server and its downstream server still serve.
			text, _ := chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_down_echo:{"text":"after"}]]`})
			if !strings.Contains(text, `echo {\"text\":\"after\"}`) {
				t.Errorf("answer after the cancellation %q", text)
			}
		})
	}
}

// TestHostReplyReplaysToolTurns: chat-reply on a session whose first turn
// called a tool sends that turn again whole: the fake API sees the
// earlier functionCall and functionResponse.
func TestHostReplyReplaysToolTurns(t *testing.T) {
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-tool", "echo")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	_, id := chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_down_echo:{"text":"first"}]]`})
	if id == "" {
		t.Fatal("no sessionId")
	}
	text, id2 := chat(t, cs, "chat-reply", map[string]any{"prompt": "and then?", "sessionId": id})
	if id2 != id {
		t.Errorf("sessionId %q, want %q", id2, id)
	}
	var reply *fakeapi.Request
	for _, r := range h.api.Requests() {
		if r.Method == fakeapi.MethodStream && r.LastUserText == "and then?" {
			reply = &r
		}
	}
	if reply == nil {
		t.Fatalf("the reply did not reach the API; answer %q", text)
	}
	// The prompt, the call, its result, the answer, the new prompt.
	if reply.NumContents != 5 {
		t.Errorf("the reply sent %d contents, want 5:\n%s", reply.NumContents, reply.Body)
	}
	var body struct {
		Contents []struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(reply.Body, &body); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range body.Contents {
		for _, p := range c.Parts {
			var part map[string]json.RawMessage
			json.Unmarshal(p, &part)
			switch {
			case part["functionCall"] != nil:
				kinds = append(kinds, c.Role+":call "+string(part["functionCall"]))
			case part["functionResponse"] != nil:
				kinds = append(kinds, c.Role+":result "+string(part["functionResponse"]))
			case part["text"] != nil:
				kinds = append(kinds, c.Role+":text")
			}
		}
	}
	ok := len(kinds) == 5 && kinds[0] == "user:text" && kinds[3] == "model:text" && kinds[4] == "user:text"
	for _, k := range []string{"model:call ", "user:result "} {
		i := map[string]int{"model:call ": 1, "user:result ": 2}[k]
		ok = ok && len(kinds) == 5 && strings.HasPrefix(kinds[i], k) &&
			strings.Contains(kinds[i], `"name":"mcp_down_echo"`) && strings.Contains(kinds[i], "first")
	}
	if !ok {
		t.Errorf("the reply's contents:\n%s", strings.Join(kinds, "\n"))
	}
}

// TestMCPListDeadAndGood: `mcp list` shows a good server connected with
// its tools, and a server whose command does not exist and one that
// never answers initialize as failed with their reasons; it exits 0.
func TestMCPListDeadAndGood(t *testing.T) {
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

// TestHostTurnTimeoutCancelsDownstream: the call's --timeout ends a turn
// whose tool never answers (its server's own timeout is longer): the
// client gets the timeout, and the downstream call is cancelled.
func TestHostTurnTimeoutCancelsDownstream(t *testing.T) {
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true, "timeout": 600000}, "-hang", "stall")})
	cmd := h.command("--timeout", "2s")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h.connected(t, "down")
	res, err := cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": `[[call:mcp_down_stall:{}]]`}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "mcp_down_stall") ||
		!strings.Contains(text, "within 2s") || !strings.Contains(text, "--timeout") || strings.Contains(text, "Gemini API") {
		t.Errorf("result %+v, want the call's timeout", res.Content[0])
	}
	h.stderr.wait(t, 1, "mcpdown: hanging tool cancelled")
}

// TestHostDownstreamCrash: a downstream server that dies mid-call fails
// that call (Gemini reads why, the turn answers), and the host connects
// to it again, whose tools then serve.
func TestHostDownstreamCrash(t *testing.T) {
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-crash", "boom", "-tool", "echo")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	prompt := `[[call:mcp_down_boom:{}]]`
	text, _ := chat(t, cs, "chat", map[string]any{"prompt": prompt})
	fr := h.results(prompt)
	if len(fr) != 1 || !strings.Contains(string(fr[0].Response), `"error"`) || !strings.Contains(text, "mcp_down_boom returned") {
		t.Fatalf("function responses %s, answer %q", fmtResponses(fr), text)
	}
	h.connected(t, "down") // the first connection's line
	h.stderr.wait(t, 2, `msg="MCP server connected"`, "mcp_server=down ")
	text, _ = chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_down_echo:{"text":"again"}]]`})
	if !strings.Contains(text, `echo {\"text\":\"again\"}`) {
		t.Errorf("answer after the reconnection %q", text)
	}
}

// TestHostReplyAfterRestart: the tool calls of a turn are stored with it,
// so chat-reply on a restarted server (the same state directory) still
// sends them to Gemini.
func TestHostReplyAfterRestart(t *testing.T) {
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-tool", "echo")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	_, id := chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_down_echo:{"text":"stored"}]]`})
	cs.Close()
	cs = h.stdio(t, nil, "")
	chat(t, cs, "chat-reply", map[string]any{"prompt": "after restart", "sessionId": id})
	var reply *fakeapi.Request
	for _, r := range h.api.Requests() {
		if r.Method == fakeapi.MethodStream && r.LastUserText == "after restart" {
			reply = &r
		}
	}
	if reply == nil || reply.NumContents != 5 || !bytes.Contains(reply.Body, []byte(`"functionCall"`)) ||
		!bytes.Contains(reply.Body, []byte(`"functionResponse"`)) || !bytes.Contains(reply.Body, []byte("stored")) {
		t.Fatalf("the reply after the restart: %+v", reply)
	}
}

// TestHostProgressAndResource: each tool call is reported as progress to
// a client that asked for it, and the mcp-servers resource shows the
// server connected with its tool.
func TestHostProgressAndResource(t *testing.T) {
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

// TestHostAlwaysAllowLastsForTheClient: over stdio, "always allow this
// tool" holds for the rest of the conversation (chat-reply does not ask
// again) and for a new one; the question says so.
func TestHostAlwaysAllowLastsForTheClient(t *testing.T) {
	h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
	var mu sync.Mutex
	var asked []string
	cs := h.stdio(t, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "tool"}}, nil
	}}, "")
	h.connected(t, "db")
	prompt := `[[call:mcp_db_query:{"sql":"select 1"}]]`
	_, id := chat(t, cs, "chat", map[string]any{"prompt": prompt})
	text, _ := chat(t, cs, "chat-reply", map[string]any{"prompt": prompt, "sessionId": id})
	if !strings.Contains(text, `query {\"sql\":\"select 1\"}`) {
		t.Errorf("the reply's answer %q", text)
	}
	text, _ = chat(t, cs, "chat", map[string]any{"prompt": prompt})
	if !strings.Contains(text, `query {\"sql\":\"select 1\"}`) {
		t.Errorf("the new conversation's answer %q", text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("asked %d times in two conversations, want 1", len(asked))
	}
	if !strings.Contains(asked[0], "holds for this client, in every conversation, until the server restarts") {
		t.Errorf("the question does not say how long an always-allow lasts and for whom: %q", asked[0])
	}
}

// TestHostWithoutElicitation: a client that cannot elicit gets an
// untrusted tool refused, Gemini being told how the operator may allow
// it; with --allow-mcp-tools naming it, it runs.
func TestHostWithoutElicitation(t *testing.T) {
	prompt := `[[call:mcp_db_query:{"sql":"select 2"}]]`
	for _, c := range []struct {
		args []string
		says string
	}{
		{nil, "--allow-mcp-tools=db.query"},
		{[]string{"--allow-mcp-tools", "db.query"}, `query {\"sql\":\"select 2\"}`},
	} {
		h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host-test", Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: h.command(c.args...)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.connected(t, "db")
		text, _ := chat(t, cs, "chat", map[string]any{"prompt": prompt})
		cs.Close()
		if fr := h.results(prompt); len(fr) != 1 || !strings.Contains(string(fr[0].Response), c.says) || !strings.Contains(text, c.says) {
			t.Errorf("%v: function responses %s, answer %q: want %q", c.args, fmtResponses(fr), text, c.says)
		}
	}
}

// TestHostSanitizedNames: a server and a tool whose names hold spaces are
// declared and called under the sanitized name.
func TestHostSanitizedNames(t *testing.T) {
	h := newHostEnv(t, map[string]any{"my server": down(t, map[string]any{"trust": true}, "-tool", "get thing")})
	cs := h.stdio(t, nil, "")
	h.stderr.wait(t, 1, `msg="MCP server connected"`, `mcp_server="my server"`)
	text, _ := chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_my_server_get_thing:{"text":"s"}]]`})
	if !strings.Contains(text, `get thing {\"text\":\"s\"}`) {
		t.Errorf("answer %q", text)
	}
}

// TestHostCancelWhileAsking: cancelling the chat while the client's user
// is being asked (elicitation/create, 2025-11-25) ends the question and
// the call; the tool never runs and the server goes on serving.
func TestHostCancelWhileAsking(t *testing.T) {
	h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
	asking, ended := make(chan struct{}), make(chan struct{})
	cs := h.stdio(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(asking)
		<-ctx.Done()
		close(ended)
		return nil, ctx.Err()
	}}, "2025-11-25")
	h.connected(t, "db")
	ctx, cancel := context.WithCancel(guardCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": `[[call:mcp_db_query:{}]]`}})
		done <- err
	}()
	<-asking
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled call succeeded")
	}
	select {
	case <-ended:
	case <-guardCtx(t).Done():
		t.Fatal("the question was not withdrawn")
	}
	text, _ := chat(t, cs, "chat", map[string]any{"prompt": "still there?"})
	if !strings.Contains(text, "still there?") {
		t.Errorf("answer %q", text)
	}
}

// TestHostConcurrentTurns: two chats at once call the same downstream
// tool, whose calls answer only when both run: turns share the host
// without waiting for each other.
func TestHostConcurrentTurns(t *testing.T) {
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true, "timeout": 30000}, "-meet", "meet", "-meet-n", "2")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	texts := make(chan string, 2)
	for _, who := range []string{"a", "b"} {
		go func() {
			res, err := cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": `[[call:mcp_down_meet:{"text":"` + who + `"}]]`}})
			if err != nil || res.IsError {
				texts <- fmt.Sprintf("%v %+v", err, res)
				return
			}
			texts <- res.Content[0].(*mcp.TextContent).Text
		}()
	}
	for range 2 {
		if text := <-texts; !strings.Contains(text, `met 2`) {
			t.Errorf("answer %q", text)
		}
	}
}

// TestHostAbandonedQuestion: a 2026-07-28 client that gives up while its
// user is asked to confirm a tool call never comes back with the answer;
// the turn it left suspended must not hold the session: the next
// chat-reply on it answers.
func TestHostAbandonedQuestion(t *testing.T) {
	h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
	asking := make(chan struct{}, 1)
	cs := h.stdio(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asking <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}, "2026-07-28")
	h.connected(t, "db")
	_, id := chat(t, cs, "chat", map[string]any{"prompt": "hello"})
	ctx, cancel := context.WithCancel(guardCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": `[[call:mcp_db_query:{}]]`, "sessionId": id}})
		done <- err
	}()
	<-asking
	cancel()
	if err := <-done; err == nil {
		t.Error("the abandoned call succeeded")
	}
	text, _ := chat(t, cs, "chat-reply", map[string]any{"prompt": "never mind", "sessionId": id})
	if !strings.Contains(text, "never mind") {
		t.Errorf("answer %q", text)
	}
}

// TestHostShutdownDuringToolCall: the server stopped (stdin closed, or
// SIGTERM) while a downstream tool hangs exits 0, and neither the
// downstream server nor the child it started outlives it.
func TestHostShutdownDuringToolCall(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process checks use /proc")
	}
	for _, how := range []string{"eof", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			pids := t.TempDir()
			h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-hang", "stall", "-child", "-pid-dir", pids)})
			cmd := h.command()
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout = io.Discard
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			h.connected(t, "down")
			io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"[[call:mcp_down_stall:{}]]"}}}
`)
			h.stderr.wait(t, 1, "mcpdown: hanging in tool")
			h.stderr.wait(t, 1, "mcpdown: child pid")
			if how == "eof" {
				stdin.Close()
			} else {
				cmd.Process.Signal(syscall.SIGTERM)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("server exited with %v", err)
				}
			case <-guardCtx(t).Done():
				cmd.Process.Kill()
				t.Fatal("the server did not exit")
			}
			// mcpdown writes its pid file before it serves; the child's may
			// come late, but mcpdown logs the child's pid once started.
			var all []int
			files, _ := filepath.Glob(filepath.Join(pids, "pid-*"))
			for _, f := range files {
				pid, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(f), "pid-"))
				all = append(all, pid)
			}
			m := regexp.MustCompile(`mcpdown: child pid (\d+)`).FindStringSubmatch(h.stderr.String())
			if len(files) == 0 || m == nil {
				t.Fatalf("pid files %v, child line %q: want mcpdown's pid and its child's", files, m)
			}
			child, _ := strconv.Atoi(m[1])
			for _, pid := range append(all, child) {
				if geminitest.Alive(pid) {
					t.Errorf("pid %d outlived the server", pid)
				}
			}
		})
	}
}

// TestHostMaxToolRounds: a model that never stops calling gets
// --max-tool-rounds rounds, then is asked to answer with function calling
// off; the answer says so in _meta.notApplied.
func TestHostMaxToolRounds(t *testing.T) {
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-tool", "echo")})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: h.command("--max-tool-rounds", "2")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h.connected(t, "down")
	prompt := `[[call:mcp_down_echo:{"text":"once"}]] [[loop-call:mcp_down_echo:{"text":"again"}]]`
	res, err := cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": prompt}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	var modes []string
	for _, r := range h.api.Requests() {
		if r.Method == fakeapi.MethodStream && r.Prompt == prompt {
			modes = append(modes, r.ToolMode)
		}
	}
	if strings.Join(modes, ",") != ",,NONE" {
		t.Errorf("tool modes of the requests %q, want two rounds then NONE", modes)
	}
	if na := fmt.Sprint(res.Meta["notApplied"]); !strings.Contains(na, "--max-tool-rounds") {
		t.Errorf("notApplied %q", na)
	}
}
