package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The MCP host's tool calls through the server binary: several at once,
// timed out, cancelled, crashed, and at shutdown (helpers in mcphost_test.go).

// TestHostParallelCalls: two calls in one answer run at the same time:
// the downstream tool answers only once both calls are running.
func TestHostParallelCalls(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestHostCancelReachesDownstream: cancelling the chat call while a
// downstream tool runs cancels that tool's call on its server; for a
// client over stdio and HTTP, and a downstream server over stdio (whose
// stderr the server logs) and Streamable HTTP.
func TestHostCancelReachesDownstream(t *testing.T) {
	t.Parallel()
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

// TestHostTurnTimeoutCancelsDownstream: the call's --timeout ends a turn
// whose tool never answers (its server's own timeout is longer): the
// client gets the timeout, and the downstream call is cancelled.
func TestHostTurnTimeoutCancelsDownstream(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// TestHostConcurrentTurns: two chats at once call the same downstream
// tool, whose calls answer only when both run: turns share the host
// without waiting for each other.
func TestHostConcurrentTurns(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
