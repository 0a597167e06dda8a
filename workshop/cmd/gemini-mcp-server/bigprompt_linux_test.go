package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// postMCP posts one JSON-RPC message to an HTTP server's /mcp in session
// sid ("" to open one) and returns the answer's status, session header
// and body (the data of an SSE answer's events).
func postMCP(t *testing.T, addr, sid string, body []byte) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(data)
}

// TestOversizedPromptRefusedFromItsSize: a call whose prompt is over
// --max-prompt-bytes (here a 5 MiB prompt, against the default 1 MiB) is
// refused, with the limit named, before anything runs; for chat (an error
// result) and an expert tool (invalid params) alike. The server's peak
// resident size before and after is logged: the refusal is judged from
// the size of the argument in the body, without decoding copies of it.
func TestOversizedPromptRefusedFromItsSize(t *testing.T) {
	big := strings.Repeat("a", 5<<20)
	for _, tc := range []struct{ tool, arg, want string }{
		{"chat", "prompt", `"isError":true`},
		{"thinkdeep", "current_analysis", `"code":-32602`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			// A server of its own: the peak resident size is the process's.
			e := newEnv(t)
			cmd := e.command("--http", "127.0.0.1:0")
			addr, _, _ := startHTTPCmd(t, cmd)
			_, sid, _ := postMCP(t, addr, "", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"big","version":"1"}}}`))
			if sid == "" {
				t.Fatal("no session")
			}
			postMCP(t, addr, sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			call := func(arg string) (int, []byte, string) {
				args, _ := json.Marshal(map[string]any{tc.arg: arg})
				body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tc.tool, args)
				code, _, answer := postMCP(t, addr, sid, body)
				return code, body, answer
			}
			// A small call first, so that what it loads is in the baseline.
			if code, _, answer := call("small"); code != http.StatusOK || strings.Contains(answer, "error") {
				t.Fatalf("a small call: %d %.500s", code, answer)
			}
			before := peakRSS(t, cmd.Process.Pid)
			code, body, answer := call(big)
			after := peakRSS(t, cmd.Process.Pid)
			t.Logf("a %d-byte body with a %d-byte %s: peak RSS %.1f → %.1f MiB (+%.1f MiB)", len(body), len(big), tc.arg,
				float64(before)/(1<<20), float64(after)/(1<<20), float64(after-before)/(1<<20))
			if code != http.StatusOK || !strings.Contains(answer, tc.want) || !strings.Contains(answer, tc.arg+" is too large: 5242880 bytes, the limit is 1048576 bytes (--max-prompt-bytes)") {
				t.Errorf("%s with a 5 MiB %s: %d %.500s", tc.tool, tc.arg, code, answer)
			}
			if inv, _ := geminitest.ReadLog(e.log); len(inv) != 1 {
				t.Errorf("%d CLI runs, want the small call's only", len(inv))
			}
		})
	}
}

// TestStdioOversizedPromptRefusedFromItsSize: the same over stdio, for
// chat: the 5 MiB prompt is refused as over the limit, and the server's
// peak resident size before and after is logged.
func TestStdioOversizedPromptRefusedFromItsSize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.command()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	out := bufio.NewReader(stdout)
	// answer sends line and returns the answer to request id.
	answer := func(line string, id int) string {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			return ""
		}
		for {
			l, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the answer to %d: %v", id, err)
			}
			if strings.Contains(l, fmt.Sprintf(`"id":%d,`, id)) {
				return l
			}
		}
	}
	answer(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"big","version":"1"}}}`, 1)
	answer(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0)
	if a := answer(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"small"}}}`, 2); strings.Contains(a, "isError") {
		t.Fatalf("a small call: %.500s", a)
	}
	big := strings.Repeat("a", 5<<20)
	before := peakRSS(t, cmd.Process.Pid)
	a := answer(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"`+big+`"}}}`, 3)
	after := peakRSS(t, cmd.Process.Pid)
	t.Logf("a %d-byte line with a %d-byte prompt: peak RSS %.1f → %.1f MiB (+%.1f MiB)", len(big)+100, len(big),
		float64(before)/(1<<20), float64(after)/(1<<20), float64(after-before)/(1<<20))
	if !strings.Contains(a, `"isError":true`) || !strings.Contains(a, "prompt is too large: 5242880 bytes, the limit is 1048576 bytes (--max-prompt-bytes)") {
		t.Errorf("chat with a 5 MiB prompt: %.500s", a)
	}
	if inv, _ := geminitest.ReadLog(e.log); len(inv) != 1 {
		t.Errorf("%d CLI runs, want the small call's only", len(inv))
	}
}
