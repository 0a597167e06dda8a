package interop

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/render"
)

// Exit codes of the Inspector's CLI.
const (
	inspectorOK           = 0
	inspectorAuthRequired = 3
	inspectorToolError    = 5
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// inspectorRun is one run of the Inspector's CLI, its JSON output decoded.
type inspectorRun struct {
	runResult
	result struct {
		Tools []struct {
			Name        string
			InputSchema struct{ Required []string }
		}
		Content []struct{ Type, Text string }
		IsError bool
		Meta    map[string]any `json:"_meta"`
	}
	errCode string // the error envelope's code on stderr, if any
}

// inspect runs `inspector --cli` with target (a URL or a command line) and
// args, always non-interactively: --stored-auth-only makes a server that
// wants a token an error (exit 3) instead of an OAuth login.
func inspect(t *testing.T, tl npmTools, env []string, target []string, args ...string) inspectorRun {
	t.Helper()
	argv := append([]string{tl.path("@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"),
		"--cli"}, target...)
	argv = append(argv, "--stored-auth-only", "--format", "json")
	argv = append(argv, args...)
	var r inspectorRun
	r.runResult = run(t, 2*time.Minute, env, t.TempDir(), tl.node, argv...)
	if out := strings.TrimSpace(r.stdout); out != "" {
		var envelope struct{ Result json.RawMessage }
		if err := json.Unmarshal([]byte(out), &envelope); err != nil || envelope.Result == nil {
			t.Fatalf("inspector stdout is not a {\"result\": …} object (%v): %s", err, clip(out, 2000))
		}
		if err := json.Unmarshal(envelope.Result, &r.result); err != nil {
			t.Fatalf("inspector result: %v: %s", err, clip(out, 2000))
		}
	}
	// The error envelope is the last line on stderr; a stdio server's own
	// log lines come before it.
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var envelope struct {
		Error struct{ Code, Message string }
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &envelope) == nil {
		r.errCode = envelope.Error.Code
	}
	return r
}

// TestInspector drives the server with the MCP Inspector's CLI over stdio,
// Streamable HTTP (with and without sessions) and SSE: tools/list with the
// Inspector's schema portability check, a successful chat, a chat that
// fails (exit 5), and, where the server requires a bearer token, the same
// without it (exit 3) and with a wrong one (exit 3).
func TestInspector(t *testing.T) {
	tl := tools(t)
	t.Parallel()

	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, serverOpts{})
		target := []string{}
		for k, v := range s.configEnv() {
			target = append(target, "-e", k+"="+v)
		}
		target = append(target, serverBin)
		checkInspector(t, tl, s, target, "")
	})

	secured := newServer(t, serverOpts{http: true, tokens: []string{"another-token-0123456789", testToken}})
	open := newServer(t, serverOpts{http: true})
	stateless := newServer(t, serverOpts{http: true, stateless: true, tokens: []string{testToken}})
	for _, tc := range []struct {
		name  string
		s     *server
		path  string
		token string
	}{
		{"http_token", secured, "/mcp", testToken},
		{"sse_token", secured, "/sse", testToken},
		{"http_stateless_token", stateless, "/mcp", testToken},
		{"http_no_auth", open, "/mcp", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			transport := "http"
			if tc.path == "/sse" {
				transport = "sse"
			}
			target := []string{"--transport", transport, "--server-url", tc.s.base + tc.path}
			checkInspector(t, tl, tc.s, target, tc.token)
			if tc.token == "" {
				return
			}
			for _, header := range []string{"", "Authorization: Bearer wrong-token-0123456789"} {
				args := []string{"--method", "tools/call", "--tool-name", "chat", "--tool-arg", "prompt=must not run"}
				if header != "" {
					args = append(args, "--header", header)
				}
				r := inspect(t, tl, tl.env(t), target, args...)
				if r.code != inspectorAuthRequired || r.errCode != "auth_required" {
					t.Errorf("header %q: exit %d (%s), want %d (auth_required)\nstderr: %s", header, r.code, r.errCode, inspectorAuthRequired, clip(r.stderr, 2000))
				}
			}
			for _, inv := range tc.s.invocations(t) {
				if strings.Contains(inv.Prompt, "must not run") {
					t.Errorf("a call without a valid token ran the CLI: %+v", inv)
				}
			}
		})
	}
}

// checkInspector runs tools/list and two chat calls through the Inspector.
func checkInspector(t *testing.T, tl npmTools, s *server, target []string, token string) {
	t.Helper()
	var auth []string
	if token != "" {
		auth = []string{"--header", "Authorization: Bearer " + token}
	}
	env := tl.env(t)

	// --strict: exit 6 if a tool schema has an error-severity portability
	// problem.
	r := inspect(t, tl, env, target, append(auth, "--method", "tools/list", "--strict")...)
	if r.code != inspectorOK {
		t.Fatalf("tools/list: exit %d\nstdout: %s\nstderr: %s", r.code, clip(r.stdout, 2000), clip(r.stderr, 4000))
	}
	var names []string
	for _, tool := range r.result.Tools {
		names = append(names, tool.Name)
		if (tool.Name == "chat" || tool.Name == "chat-reply") && !slices.Equal(tool.InputSchema.Required, []string{"prompt"}) {
			t.Errorf("%s: required = %v, want [prompt]", tool.Name, tool.InputSchema.Required)
		}
	}
	if !slices.Equal(names, []string{"analyze", "chat", "chat-page", "chat-reply", "codereview", "debug", "image", "job", "precommit", "research", "sessions", "thinkdeep"}) {
		t.Errorf("tools/list: tools %v, want chat, chat-page, chat-reply, job, sessions and the expert tools", names)
	}
	geminitest.CheckStderr(t, "inspector (with a stdio server's stderr)", r.stderr)

	marker := "inspector " + t.Name()
	prompt := marker + " says hello"
	r = inspect(t, tl, env, target, append(auth, "--method", "tools/call", "--tool-name", "chat", "--tool-arg", "prompt="+prompt)...)
	if r.code != inspectorOK {
		t.Fatalf("tools/call chat: exit %d\nstdout: %s\nstderr: %s", r.code, clip(r.stdout, 2000), clip(r.stderr, 4000))
	}
	id, _ := r.result.Meta["sessionId"].(string)
	if !uuidRE.MatchString(id) {
		t.Errorf("tools/call chat: _meta %v has no sessionId UUID", r.result.Meta)
	}
	if r.result.IsError || len(r.result.Content) != 2 || r.result.Content[0].Type != "text" || r.result.Content[0].Text != wantAnswer(prompt) ||
		r.result.Content[1].Text != render.SessionNote(id) {
		t.Errorf("tools/call chat: %+v\nwant the text %q and the session's note", r.result, wantAnswer(prompt))
	}
	geminitest.CheckStderr(t, "inspector (with a stdio server's stderr)", r.stderr)

	r = inspect(t, tl, env, target, append(auth, "--method", "tools/call", "--tool-name", "chat", "--tool-arg", "prompt="+marker+" fails [[exit:41]]")...)
	if r.code != inspectorToolError || r.errCode != "tool_is_error" {
		t.Errorf("failing tools/call: exit %d (%s), want %d (tool_is_error)\nstderr: %s", r.code, r.errCode, inspectorToolError, clip(r.stderr, 4000))
	}
	if !r.result.IsError || len(r.result.Content) != 1 || !strings.HasPrefix(r.result.Content[0].Text, "Error executing gemini: authentication failed (exit 41)") {
		t.Errorf("failing tools/call: %+v", r.result)
	}
	geminitest.CheckStderr(t, "inspector (with a stdio server's stderr)", r.stderr)

	// The server ran the CLI once per call, and reaped it.
	var invs []geminitest.Invocation
	for _, inv := range s.invocations(t) {
		if strings.Contains(inv.Prompt, marker) {
			invs = append(invs, inv)
		}
	}
	if len(invs) != 2 {
		t.Errorf("the fake CLI ran %d times for this test, want 2: %+v", len(invs), invs)
	}
	for _, inv := range invs {
		if alive(inv.Pid) {
			t.Errorf("the fake CLI (pid %d, prompt %q) is still running", inv.Pid, inv.Prompt)
		}
	}
}
