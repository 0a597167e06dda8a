package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// exitCode is the " (exit N)" that one-shot errors name.
var exitCode = regexp.MustCompile(` \(exit \d+\)`)

// TestE2EBackendsAgree sends the same calls through a one-shot server and
// a warm one and compares what comes back: answer texts, errors, and the
// session each reply continued.
func TestE2EBackendsAgree(t *testing.T) {
	t.Parallel()
	servers := map[string]*harness{}
	for _, b := range backends {
		servers[b] = start(t, "--backend", b)
	}
	work := t.TempDir()
	type outcome struct{ first, reply, sysPrompt, failed string }
	got := map[string]outcome{}
	for _, b := range backends {
		h := servers[b]
		var o outcome
		res := h.call(t, callTimeout, "chat", map[string]any{"prompt": "agree: first turn", "model": model, "cwd": work})
		o.first, _ = success(t, res)
		_, id := success(t, res)
		res = h.call(t, callTimeout, "chat-reply", map[string]any{"prompt": "agree: second turn", "sessionId": id})
		var replyID string
		o.reply, replyID = success(t, res)
		if replyID != id {
			t.Errorf("%s: the reply continued %s, not %s", b, replyID, id)
		}
		res = h.call(t, callTimeout, "chat", map[string]any{"prompt": "agree: with a system prompt", "model": model, "systemPrompt": "AGREE-SYSTEM", "cwd": work})
		o.sysPrompt, _ = success(t, res)
		res = h.call(t, callTimeout, "chat", map[string]any{"prompt": "agree: [[status:400]]", "model": model, "cwd": work})
		if !res.IsError {
			t.Fatalf("%s: the 400 call succeeded", b)
		}
		o.failed, _, _ = strings.Cut(text(t, res), "\nStderr: ")
		// Only a one-shot CLI exits; a warm process answers the same
		// failure without an exit code. The rest must match.
		o.failed = exitCode.ReplaceAllString(o.failed, "")
		got[b] = o
		t.Logf("%s: %+v", b, o)
	}
	if got["oneshot"] != got["warm"] {
		t.Errorf("the backends disagree:\n oneshot %+v\n warm    %+v", got["oneshot"], got["warm"])
	}
	for _, b := range backends {
		servers[b].shutdown(t)
	}
}
