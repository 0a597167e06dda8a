package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// TestStoreStartupErrors: a --store the server cannot open stops it at
// start (exit 1) with what to do, before it serves anything.
func TestStoreStartupErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A state directory that is a file: the embedded store's file cannot
	// be made, which the server finds before it serves.
	notDir := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(notDir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--store", "mongodb://db:27017"}, 1, []string{"this server has no", "mongodb", "it supports", "memory:", "sqlite:"}},
		{[]string{"--store", "sessions.db"}, 2, []string{"use sqlite:PATH, memory:, redis://HOST:PORT/DB, redis+cluster://"}},
		{[]string{"--store", "redis+cluster://u:s3cret@127.0.0.1"}, 1, []string{"opening the session store redis+cluster://u:", "not host:port"}},
		{[]string{"--store", "redis+sentinel://127.0.0.1:1"}, 1, []string{"the master's name goes after the sentinels"}},
		// Nothing listens on port 1: an unreachable Redis stops the start,
		// naming its address.
		{[]string{"--store", "redis://127.0.0.1:1/0"}, 1, []string{"opening the session store redis://127.0.0.1:1/0", "127.0.0.1:1"}},
		{[]string{"--state-dir", notDir}, 1, []string{"opening the session store sqlite:" + notDir, "not a directory", "check --store and --state-dir"}},
		{[]string{"--max-turns", "0"}, 2, []string{"--max-turns must be at least 1"}},
		{[]string{"--session-ttl", "30s"}, 2, []string{"--session-ttl must be at least 1m"}},
	} {
		cmd := e.command(tc.args...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, cmd.ProcessState.ExitCode(), tc.code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: no %q in\n%s", tc.args, w, out)
			}
		}
		if strings.Contains(string(out), "s3cret") {
			t.Errorf("%v: the password shows in\n%s", tc.args, out)
		}
	}
}

// TestStoreOpensInTheBackground: the embedded store's database is opened
// while the server answers its client, so a database SQLite cannot read
// does not stop the start: the server lists its tools, a chat answers
// without recording its session (as when the store fails during a call),
// listing the sessions fails with the store's error, and the log says why.
func TestStoreOpensInTheBackground(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.state, "sessions.db"), bytes.Repeat([]byte("not a database "), 400), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := e.command()
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "store-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if saved, _ := res.Meta["sessionSaved"].(bool); res.IsError || saved || res.Meta["sessionSaved"] == nil {
		t.Errorf("chat on a store that could not be opened: IsError %v, meta %v; want an answer with sessionSaved false", res.IsError, res.Meta)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sessions", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "session store") {
		t.Errorf("sessions on a store that could not be opened: IsError %v, %q", res.IsError, text)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("the server's exit: %v", err)
	}
	log, err := os.ReadFile(stderr.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the session store could not be opened: sessions are not recorded", "opening the session store sqlite:" + filepath.Join(e.state, "sessions.db"), "not a database"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// TestStoreReopensByItself: a server whose embedded store cannot be
// opened at start (SQLite cannot make the database's WAL file: here a
// directory stands in its place, which stops root as well as anyone)
// serves, tries again in the background, and opens the store by itself
// once the cause is gone. Meanwhile every note is true: a chat answers
// with a note that its session was NOT saved and that chat-reply cannot
// continue it now (not a sessionId to pass that would fail), chat-reply
// fails saying the call can be retried once the store is back, and
// /readyz answers 503. Once the store opens (its log line, /readyz 200),
// continuing that chat as its note says works, and chats are saved again.
func TestStoreReopensByItself(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wal := filepath.Join(e.state, "sessions.db-wal")
	if err := os.MkdirAll(wal, 0o700); err != nil {
		t.Fatal(err)
	}
	addr, _, log := startHTTPCmd(t, e.command("--http", "127.0.0.1:0"))
	ctx := ctx30(t)
	if !log.WaitFor(ctx, "the session store could not be opened") {
		t.Fatal("no log line of the failed open")
	}
	if code, body := readyz(t, addr); code != http.StatusServiceUnavailable || !strings.Contains(body["reason"], "session store") {
		t.Fatalf("/readyz with the store unopened: %d %v", code, body)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "reopen", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) (*mcp.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var texts []string
		for _, c := range res.Content {
			texts = append(texts, c.(*mcp.TextContent).Text)
		}
		return res, strings.Join(texts, "\n")
	}

	res, text := call("chat", map[string]any{"prompt": "unsaved one"})
	id, _ := res.Meta["sessionId"].(string)
	if res.IsError || id == "" || res.Meta["sessionSaved"] != false {
		t.Fatalf("chat on an unopened store: IsError %v, meta %v: %s", res.IsError, res.Meta, text)
	}
	note := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
	for _, want := range []string{"this turn was NOT saved: the session store is unavailable", "chat-reply cannot continue session " + id + " now",
		"once the store is back (the server keeps trying to reach it), chat-reply with sessionId " + id + " together with cwd " + e.work + " continues it"} {
		if !strings.Contains(note, want) {
			t.Errorf("the chat's note lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(text, "To continue it, pass sessionId") || strings.Contains(text, "pass it to chat-reply to continue") {
		t.Errorf("the chat's result promises a sessionId that does not work now:\n%s", text)
	}
	// What the note says: chat-reply cannot continue it now, and says the
	// call can be retried.
	res, text = call("chat-reply", map[string]any{"prompt": "too soon", "sessionId": id, "cwd": e.work})
	if !res.IsError || !strings.Contains(text, "the session store is unavailable") || !strings.Contains(text, "nothing was sent to Gemini. The call can be retried") {
		t.Fatalf("chat-reply on an unopened store: %s", text)
	}
	if inv, _ := geminitest.ReadLog(e.log); len(inv) != 1 {
		t.Fatalf("%d CLI runs, want 1: the refused chat-reply must not run", len(inv))
	}

	// The cause goes away: the store opens by itself.
	if err := os.Remove(wal); err != nil {
		t.Fatal(err)
	}
	if !log.WaitFor(ctx, "the session store is open: sessions are recorded again") {
		t.Fatal("the store did not open once it could")
	}
	if code, body := readyz(t, addr); code != http.StatusOK {
		t.Fatalf("/readyz once the store opened: %d %v", code, body)
	}
	// The retry the error promised works, as the chat's note said.
	res, text = call("chat-reply", map[string]any{"prompt": "now", "sessionId": id, "cwd": e.work})
	if res.IsError || !strings.HasPrefix(text, "fake-gemini turn=2 ") || res.Meta["sessionSaved"] != nil {
		t.Fatalf("chat-reply once the store opened: meta %v: %s", res.Meta, text)
	}
	res, text = call("chat", map[string]any{"prompt": "saved one"})
	saved, _ := res.Meta["sessionId"].(string)
	if res.IsError || saved == "" || res.Meta["sessionSaved"] != nil {
		t.Fatalf("chat once the store opened: meta %v: %s", res.Meta, text)
	}
	res, text = call("sessions", map[string]any{})
	if res.IsError || !strings.Contains(text, saved) || !strings.Contains(text, id) {
		t.Fatalf("sessions once the store opened, want %s and %s: %s", id, saved, text)
	}
}

// TestMaxTurnsBinary: with --store memory: and --max-turns 2, a session's
// third turn is refused with what to do, and a new chat still answers.
func TestMaxTurnsBinary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := connect(t, e.command("--store", "memory:", "--max-turns", "2"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	res := call("chat", map[string]any{"prompt": "one"})
	id, _ := res.Meta["sessionId"].(string)
	if res.IsError || id == "" {
		t.Fatalf("chat: %+v", res)
	}
	if res := call("chat-reply", map[string]any{"prompt": "two", "sessionId": id}); res.IsError {
		t.Fatalf("second turn: %+v", res.Content[0])
	}
	res = call("chat-reply", map[string]any{"prompt": "three", "sessionId": id})
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "has reached the limit of 2 turns (--max-turns): start a new session with chat") {
		t.Fatalf("third turn: %q", text)
	}
	if inv, _ := geminitest.ReadLog(e.log); len(inv) != 2 {
		t.Fatalf("%d CLI runs, want 2: the refused turn must not run", len(inv))
	}
	if res := call("chat", map[string]any{"prompt": "new"}); res.IsError {
		t.Fatalf("a new chat: %+v", res.Content[0])
	}
}

// TestSessionsToolOverHTTP: over HTTP with two tokens, each client's
// sessions tool lists its own sessions only, newest first, with their
// titles in the structured result.
func TestSessionsToolOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr, _ := startHTTP(t, e, "--store", "memory:")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clientOf := func(token string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bin-sessions", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: authTransport(token)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	one, two := clientOf(tokenOne), clientOf(tokenTwo)
	chat := func(cs *mcp.ClientSession, prompt string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": prompt}})
		if err != nil || res.IsError {
			t.Fatalf("chat: %v %+v", err, res)
		}
		return res.Meta["sessionId"].(string)
	}
	a1, b1, a2 := chat(one, "first of one"), chat(two, "only of two"), chat(one, "second of one")
	list := func(cs *mcp.ClientSession) []string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sessions", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("sessions: %v %+v", err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var out struct {
			Sessions []struct{ ID, Title string }
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range out.Sessions {
			got = append(got, s.ID+" "+s.Title)
		}
		return got
	}
	if got, want := list(one), []string{a2 + " second of one", a1 + " first of one"}; !slices.Equal(got, want) {
		t.Errorf("token one lists %q, want %q", got, want)
	}
	if got, want := list(two), []string{b1 + " only of two"}; !slices.Equal(got, want) {
		t.Errorf("token two lists %q, want %q", got, want)
	}
}

const tokenOne, tokenTwo = "first-token-0123456789", "second-token-0123456789"
