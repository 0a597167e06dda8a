package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// exitCode is the " (exit N)" that one-shot errors name.
var exitCode = regexp.MustCompile(` \(exit \d+\)`)

// contentsN and modelName are the number of contents and the model an
// answer of the fake names.
var (
	contentsN = regexp.MustCompile(`contents=\d+ `)
	modelName = regexp.MustCompile(`model=\S+ `)
)

// TestE2EBackendsAgree sends the same calls through a one-shot server, a
// warm one and an API one, and compares what comes back: answer texts,
// errors, and the session each reply continued. Then each server restarts
// on its state directory and continues its session, and each family's
// session is offered to a server of the other family, which must refuse
// it.
func TestE2EBackendsAgree(t *testing.T) {
	t.Parallel()
	servers := map[string]*harness{}
	for _, b := range backends {
		servers[b] = start(t, b)
	}
	work := t.TempDir()
	type outcome struct{ first, reply, sysPrompt, failed string }
	got := map[string]outcome{}
	ids := map[string]string{}
	for _, b := range backends {
		h := servers[b]
		var o outcome
		res := h.call(t, callTimeout, "chat", map[string]any{"prompt": "agree: first turn", "model": model, "cwd": work})
		o.first, _ = success(t, res)
		_, id := success(t, res)
		ids[b] = id
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
		t.Errorf("the CLI backends disagree:\n oneshot %+v\n warm    %+v", got["oneshot"], got["warm"])
	}

	// The API backend answers the same conversation, but what it sends
	// differs where the CLI adds its own: the CLI always sends a system
	// prompt (so its answers say system=yes even when none was asked for)
	// and its own context contents on a resumed turn, and its errors are
	// its own words with its exit code. What must match: the answers with
	// those two counts aside, the system prompt call exactly, and an error
	// that names the status and the API's message.
	cli, api := got["oneshot"], got["api"]
	if want := strings.Replace(cli.first, "system=yes", "system=no", 1); api.first != want || !strings.Contains(cli.first, "system=yes") {
		t.Errorf("first turn: the API backend answered %q, the CLI %q", api.first, cli.first)
	}
	mask := func(s string) string {
		s = modelName.ReplaceAllString(strings.Replace(s, "system=yes", "system=no", 1), "model=M ")
		return contentsN.ReplaceAllString(s, "contents=N ")
	}
	// A chat-reply without a model goes on with its session's model on
	// the API backend; the CLI takes its own default.
	if mask(api.reply) != mask(cli.reply) || !strings.Contains(api.reply, "model="+model+" contents=3 system=no ") {
		t.Errorf("second turn: the API backend answered %q, the CLI %q", api.reply, cli.reply)
	}
	if api.sysPrompt != cli.sysPrompt {
		t.Errorf("system prompt: the API backend answered %q, the CLI %q", api.sysPrompt, cli.sysPrompt)
	}
	for _, f := range []string{api.failed, cli.failed} {
		if !strings.HasPrefix(f, "Error executing gemini: ") || !strings.Contains(f, "400") || !strings.Contains(f, fakeapi.ErrorMessage(400)) {
			t.Errorf("the 400 error does not name the status and the API's message: %q", f)
		}
	}

	// A restart keeps every backend's sessions: the state directory (and,
	// for the CLI, its own session files) holds them.
	for _, b := range backends {
		h := servers[b]
		h.shutdown(t)
		h.launch(t, b)
		res := h.call(t, callTimeout, "chat-reply", map[string]any{"prompt": "agree: after a restart", "sessionId": ids[b]})
		answer, id := success(t, res)
		second := h.stream(t, "agree: second turn")
		third := h.stream(t, "agree: after a restart")
		if id != ids[b] || !strings.Contains(answer, "last=agree: after a restart") || third.NumContents <= second.NumContents {
			t.Errorf("%s after a restart: %q on %s, %d contents after %d: the session did not survive", b, answer, id, third.NumContents, second.NumContents)
		}
		if b == "api" && third.NumContents != 5 {
			t.Errorf("api after a restart: %d contents, want the two earlier turns and the new prompt", third.NumContents)
		}
		h.shutdown(t)
	}

	// A session belongs to its family: the other family's server, on the
	// same state directory, refuses it and asks the API nothing.
	for _, c := range []struct{ from, to, want string }{
		{"api", "oneshot", "was started on the Gemini API backend (--backend api), and this server runs the Gemini CLI backends"},
		{"oneshot", "api", "was started on the Gemini CLI backends (--backend warm or oneshot), and this server runs the Gemini API backend"},
	} {
		h := servers[c.from]
		h.launch(t, c.to)
		res := h.call(t, callTimeout, "chat-reply", map[string]any{"prompt": "agree: across families", "sessionId": ids[c.from]})
		if msg := text(t, res); !res.IsError || !strings.Contains(msg, "session "+ids[c.from]+" "+c.want) {
			t.Errorf("a %s session continued on %s: %s", c.from, c.to, dump(res))
		}
		if rs := h.streams("agree: across families"); len(rs) != 0 {
			t.Errorf("a %s session continued on %s reached the API", c.from, c.to)
		}
		h.shutdown(t)
	}
	servers["api"].checkNoInvocations(t)
	servers["oneshot"].checkNoInvocations(t) // relaunched on the API backend
}
