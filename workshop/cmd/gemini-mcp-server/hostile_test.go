package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The tests of this file give the MCP host downstream servers that send
// too much (internal/geminitest/mcpdown's hostile modes), and check that
// the server's memory stays bounded and that it says what it refused.

// hostileMemoryBound is the peak resident size the server must stay
// under while a downstream server sends tens of megabytes or more: its
// own size plus a few times the host's cap on one message.
const hostileMemoryBound = 200 << 20

// stdioCmd starts the server over stdio with args and returns the session
// and the process.
func (h *hostEnv) stdioCmd(t *testing.T, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := h.command(args...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd
}

func needProc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak memory is read from /proc")
	}
}

// TestHostHugeResult: a Streamable HTTP tool's 50 MB result is refused at
// the host's cap on one message, and a 1 MB one reaches Gemini cut to the
// CLI's 40,000 characters (the first fifth and the last four fifths, with
// its note); the server's memory stays bounded.
func TestHostHugeResult(t *testing.T) {
	needProc(t)
	bigURL, _ := downHTTP(t, "http", "-huge", "huge", "-huge-bytes", strconv.Itoa(50<<20))
	wideURL, _ := downHTTP(t, "http", "-huge", "huge", "-huge-bytes", strconv.Itoa(1<<20))
	h := newHostEnv(t, map[string]any{
		"big":  map[string]any{"httpUrl": bigURL, "trust": true, "timeout": 60000},
		"wide": map[string]any{"httpUrl": wideURL, "trust": true, "timeout": 60000},
	})
	cs, cmd := h.stdioCmd(t)
	h.connected(t, "big", "wide")

	prompt := `[[call:mcp_wide_huge:{}]]`
	chat(t, cs, "chat", map[string]any{"prompt": prompt})
	fr := h.results(prompt)
	if len(fr) != 1 {
		t.Fatalf("function responses %s", fmtResponses(fr))
	}
	var resp struct{ Output string }
	if err := json.Unmarshal(fr[0].Response, &resp); err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(resp.Output)); n > 41000 || !strings.Contains(resp.Output, "Output too large. Showing first 8,000 and last 32,000 characters.") ||
		!strings.Contains(resp.Output, "HUGE-HEAD") || !strings.Contains(resp.Output, "HUGE-TAIL") || !strings.Contains(resp.Output, "characters omitted] ...") {
		t.Errorf("the 1 MB result reached Gemini as %d characters: %.300q … %.300q", n, resp.Output, resp.Output[max(0, len(resp.Output)-300):])
	}

	prompt = `[[call:mcp_big_huge:{}]]`
	chat(t, cs, "chat", map[string]any{"prompt": prompt})
	fr = h.results(prompt)
	if len(fr) != 1 || len(fr[0].Response) > 100<<10 || !strings.Contains(string(fr[0].Response), "larger than") {
		t.Errorf("the 50 MB result reached Gemini as %d bytes: %.500s", len(fr[0].Response), fr[0].Response)
	}
	peak := peakRSS(t, cmd.Process.Pid)
	t.Logf("the server's peak RSS: %d MB", peak>>20)
	if peak > hostileMemoryBound {
		t.Errorf("the server's peak RSS was %d MB, over %d MB", peak>>20, hostileMemoryBound>>20)
	}
}

// TestHostEndlessBody: a tool whose answer never ends (an HTTP body over
// Streamable HTTP, one line on stdio) is cut at the host's cap on one
// message: the call fails with the reason, the turn answers, memory stays
// bounded, and the server's other tools still serve once the host has
// connected again.
func TestHostEndlessBody(t *testing.T) {
	needProc(t)
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			cfg := down(t, map[string]any{"trust": true, "timeout": 3000}, "-endless", "forever", "-tool", "echo")
			var downLog *logWatch // the HTTP server's, which outlives the connection
			if transport == "http" {
				var url string
				url, downLog = downHTTP(t, "http", "-endless", "forever", "-tool", "echo")
				cfg = map[string]any{"httpUrl": url, "trust": true, "timeout": 3000}
			}
			h := newHostEnv(t, map[string]any{"down": cfg})
			cs, cmd := h.stdioCmd(t, "--timeout", "30s")
			h.connected(t, "down")
			prompt := `[[call:mcp_down_forever:{}]]`
			chat(t, cs, "chat", map[string]any{"prompt": prompt})
			fr := h.results(prompt)
			if len(fr) != 1 || !strings.Contains(string(fr[0].Response), `"error"`) || !strings.Contains(string(fr[0].Response), "larger than") {
				t.Errorf("function responses %.1000s", fmtResponses(fr))
			}
			if downLog != nil {
				downLog.wait(t, 1, "mcpdown: endless body cut after")
			}
			peak := peakRSS(t, cmd.Process.Pid)
			t.Logf("the server's peak RSS: %d MB", peak>>20)
			if peak > hostileMemoryBound {
				t.Errorf("the server's peak RSS was %d MB, over %d MB", peak>>20, hostileMemoryBound>>20)
			}
			h.stderr.wait(t, 2, `msg="MCP server connected"`, "mcp_server=down ")
			if text, _ := chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_down_echo:{"text":"after"}]]`}); !strings.Contains(text, `echo {\"text\":\"after\"}`) {
				t.Errorf("answer after the endless body %q", text)
			}
		})
	}
}

// TestHostExplodingSchema: a 2 KB schema whose $defs double at each of 20
// levels is not declared to Gemini (it would be megabytes once inlined):
// the tool is listed as not offered, with the reason, and the server's
// other tool is declared.
func TestHostExplodingSchema(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-explode", "boom", "-tool", "echo")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	chat(t, cs, "chat", map[string]any{"prompt": "hello"})
	var req *fakeapi.Request
	for _, r := range h.api.Requests() {
		if r.Method == fakeapi.MethodStream && r.LastUserText == "hello" {
			req = &r
		}
	}
	if req == nil {
		t.Fatal("the turn did not reach the API")
	}
	if len(req.Body) > 64<<10 || len(req.Tools) != 1 || req.Tools[0] != "mcp_down_echo" {
		t.Errorf("the request declared %q in %d bytes", req.Tools, len(req.Body))
	}
	res, err := cs.ReadResource(guardCtx(t), &mcp.ReadResourceParams{URI: "gemini-mcp://mcp-servers"})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Contents[0].Text; !strings.Contains(text, `"tool": "boom"`) || !strings.Contains(text, "schema") {
		t.Errorf("the mcp-servers resource does not say why boom is not offered:\n%s", text)
	}
}

// TestHostEndlessPages: a server whose tools/list always has another page
// fails after the host's cap on pages, with the reason, rather than being
// paged until its timeout (or forever, for a listing after a change).
func TestHostEndlessPages(t *testing.T) {
	t.Parallel()
	url, downLog := downHTTP(t, "http", "-endless-pages", "-tool", "echo")
	h := newHostEnv(t, map[string]any{"pages": map[string]any{"httpUrl": url, "timeout": 20000}})
	out := h.mcpList(t, nil)
	if !strings.Contains(out, "✗ pages: ") || !strings.Contains(out, "pages") || !strings.Contains(out, "reason: listing tools: ") {
		t.Errorf("mcp list:\n%s", out)
	}
	if n := downLog.count("mcpdown: tools/list page "); n > 100 {
		t.Errorf("the host asked for %d pages", n)
	}
}
