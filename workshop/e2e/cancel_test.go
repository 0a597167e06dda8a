package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestE2ECancelKillsNode cancels a one-shot call while the real CLI waits
// for the API: every node process the CLI started must be gone within 2 s.
func TestE2ECancelKillsNode(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("needs /proc")
	}
	begin := time.Now()
	h := start(t, "oneshot")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := h.session.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "e2e:cancel [[sleep:60000]]", "model": "gemini-e2e-model"}})
		done <- res
	}()
	// Wait until the CLI has asked the API: it is running for real.
	h.waitArrived(t, "e2e:cancel")
	t.Logf("the CLI reached the API after %v", time.Since(begin).Round(time.Millisecond))
	pids := h.cliProcesses(t)
	var node bool
	for _, cmd := range pids {
		node = node || strings.Contains(cmd, "node")
	}
	if !node {
		t.Fatalf("no node process found among %v: the check would prove nothing", pids)
	}
	start := time.Now()
	cancel()
	<-done
	for time.Since(start) < 2*time.Second && len(h.cliProcesses(t)) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if left := h.cliProcesses(t); len(left) > 0 {
		t.Fatalf("2 s after the cancel these still run: %v", left)
	}
	t.Logf("%d CLI processes gone %v after the cancel", len(pids), time.Since(start).Round(time.Millisecond))
	h.shutdown(t)
	t.Logf("done after %v", time.Since(begin).Round(time.Millisecond))
}

// cliProcesses lists the live processes, other than the server, that run
// with this harness's HOME: the CLI and whatever it started.
func (h *harness) cliProcesses(t *testing.T) map[int]string {
	t.Helper()
	procs, ok := homeProcesses(h.home, h.cmd.Process.Pid)
	if !ok {
		t.Fatal("no /proc to list processes in")
	}
	return procs
}

// TestE2EWarmCancel cancels a warm call while the real CLI waits for the
// API: the call ends at once, the process serves on, and the cancelled
// turn is not in the session's history.
func TestE2EWarmCancel(t *testing.T) {
	h := start(t, "warm")
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": "e2e:warm-cancel first", "model": model})
	_, id := success(t, res)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := h.session.CallTool(ctx, &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": "e2e:warm-cancel hang [[sleep:60000]]", "sessionId": id}})
		done <- res
	}()
	h.waitArrived(t, "e2e:warm-cancel hang")
	start := time.Now()
	cancel()
	<-done
	t.Logf("cancel returned after %v", time.Since(start).Round(time.Millisecond))
	// The next turn runs in the same process, on the history without the
	// cancelled turn: user, model, user.
	res = h.call(t, callTimeout, "chat-reply", map[string]any{"prompt": "e2e:warm-cancel after", "sessionId": id})
	answer, id2 := success(t, res)
	if id2 != id || !strings.Contains(answer, "contents=3 ") {
		t.Fatalf("after the cancel: %q on %s", answer, id2)
	}
	h.shutdown(t)
}
