package main

import (
	"strings"
	"testing"
)

// TestTwoStdioServersOneEmbeddedStore runs two stdio servers at once on
// one state directory, so one embedded store, for each backend family:
// a chat on A is continued on B, and both list it.
func TestTwoStdioServersOneEmbeddedStore(t *testing.T) {
	t.Parallel()
	t.Run("api", func(t *testing.T) {
		e, fake := apiEnv(t)
		a, b := connect(t, e.command("--backend", "api")), connect(t, e.command("--backend", "api"))
		first := callOK(t, a, "chat", map[string]any{"prompt": "started on A"})
		id, _ := first.Meta["sessionId"].(string)
		if res := callOK(t, b, "chat-reply", map[string]any{"prompt": "continued on B", "sessionId": id}); res.Meta["sessionId"] != id {
			t.Fatalf("chat-reply on B: session %v, want %s", res.Meta["sessionId"], id)
		}
		r := lastStream(t, fake, "continued on B")
		carries(t, r, "started on A", answerOf(first))
		if r.NumContents != 3 {
			t.Errorf("B's request has %d contents, want 3", r.NumContents)
		}
		for _, c := range []struct {
			name string
			ids  []string
		}{{"A", sessionIDs(t, a)}, {"B", sessionIDs(t, b)}} {
			if len(c.ids) != 1 || c.ids[0] != id {
				t.Errorf("sessions on %s: %q, want [%s]", c.name, c.ids, id)
			}
		}
	})
	t.Run("cli", func(t *testing.T) {
		e := newEnv(t)
		a, b := connect(t, e.command()), connect(t, e.command())
		first := callOK(t, a, "chat", map[string]any{"prompt": "started on A"})
		id, _ := first.Meta["sessionId"].(string)
		res := callOK(t, b, "chat-reply", map[string]any{"prompt": "continued on B", "sessionId": id})
		if res.Meta["sessionId"] != id || !strings.HasPrefix(resultText(res), "fake-gemini turn=2 ") {
			t.Fatalf("chat-reply on B: %v %q", res.Meta["sessionId"], resultText(res))
		}
		for _, c := range []struct {
			name string
			ids  []string
		}{{"A", sessionIDs(t, a)}, {"B", sessionIDs(t, b)}} {
			if len(c.ids) != 1 || c.ids[0] != id {
				t.Errorf("sessions on %s: %q, want [%s]", c.name, c.ids, id)
			}
		}
	})
}
