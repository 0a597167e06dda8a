package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// TestE2EWarmChatsInARow checks, on the real CLI, new chats sent back to
// back: they outrun the spares of one process, so a second process
// starts; the chats after it are served from the spares of both
// processes, and a reply to each continues it in the process holding it.
func TestE2EWarmChatsInARow(t *testing.T) {
	t.Parallel()
	h := start(t, "warm", "--log-level", "debug")
	work := t.TempDir()
	var ids []string
	chat := func(i int) {
		res := h.call(t, callTimeout, "chat", map[string]any{"prompt": fmt.Sprintf("e2e:row %d", i), "model": model, "cwd": work})
		_, id := success(t, res)
		ids = append(ids, id)
	}
	// The first chats find the only process making spares.
	for i := range 4 {
		chat(i)
	}
	if !h.stderr.WaitFor(geminitest.Context(t), `msg="another warm gemini process started`) {
		t.Fatalf("no second process started for chats in a row; server log:\n%s", h.stderr)
	}
	for i := 4; i < 10; i++ {
		chat(i)
	}
	// Which process served each chat from a spare.
	pids := map[string]string{}
	for _, line := range strings.Split(h.stderr.String(), "\n") {
		if !strings.Contains(line, `msg="a new chat uses a spare session"`) {
			continue
		}
		pid, session := field(line, "pid"), field(line, "session")
		if pid != "" && session != "" {
			pids[session] = pid
		}
	}
	served := map[string]bool{}
	for _, id := range ids[4:] {
		if pids[id] != "" {
			served[pids[id]] = true
		}
	}
	if len(served) != 2 {
		t.Errorf("the chats after the second process started were served from spares of %d processes, want 2 (%v)", len(served), pids)
	}
	for i, id := range ids {
		res := h.call(t, callTimeout, "chat-reply", map[string]any{"prompt": fmt.Sprintf("e2e:row reply %d", i), "sessionId": id})
		answer, got := success(t, res)
		if got != id {
			t.Errorf("the reply to %s continued %s", id, got)
		}
		if !strings.Contains(answer, "contents=3") {
			t.Errorf("the reply to chat %d does not carry its history: %q", i, answer)
		}
	}
	h.shutdown(t)
}

// field is the value of key in a server log line (slog's text format).
func field(line, key string) string {
	_, v, ok := strings.Cut(line, " "+key+"=")
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}
