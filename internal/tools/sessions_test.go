package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
)

// tick makes d's clock advance a minute per reading, so that sessions
// have distinct times.
func tick(d *Deps) *Deps {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	n := 0
	return d.with(func(o *conversation.Options) {
		o.Now = func() time.Time { n++; return t0.Add(time.Duration(n) * time.Minute) }
	})
}

func listSessions(t *testing.T, d *Deps, args map[string]any, token string) (*mcp.CallToolResult, *SessionsOutput) {
	t.Helper()
	req := request(t, "sessions", args)
	var in SessionsInput
	if res := decodeArgs(req.Params.Arguments, &in); res != nil {
		return res, nil // refused as the tool refuses it
	}
	res, out, err := d.listSessions(as(token), req, in)
	if err != nil {
		t.Fatal(err)
	}
	return res, out
}

func ids(out *SessionsOutput) []string {
	var s []string
	for _, x := range out.Sessions {
		s = append(s, x.ID)
	}
	return s
}

// TestSessionsListsNewestFirstPaged: the sessions tool lists newest first,
// in pages joined by an opaque cursor, filtered by cwd, each with what a
// caller needs to pick one.
func TestSessionsListsNewestFirstPaged(t *testing.T) {
	t.Parallel()
	d, _ := newStubDeps(t)
	d = tick(d)
	d = d.with(func(o *conversation.Options) { o.Host = "here" })
	sub := optsOf(d).DefaultCwd + "/sub"
	if err := mkdir(sub); err != nil {
		t.Fatal(err)
	}
	res, out := listSessions(t, d, map[string]any{}, "")
	if res.IsError || len(out.Sessions) != 0 || out.NextCursor != "" || textOf(res) != "No sessions yet: start one with chat." {
		t.Fatalf("none yet: %s %+v", textOf(res), out)
	}
	a := chatOK(t, d, ChatInput{Prompt: "first question about the parser", Model: "gemini-x"})
	b := chatOK(t, d, ChatInput{Prompt: "second", Cwd: "sub"})
	c := chatOK(t, d, ChatInput{Prompt: "third"})
	replyTo(t, d, ReplyInput{Prompt: "more", SessionID: a}) // a is now the newest

	res, out = listSessions(t, d, map[string]any{"limit": 2}, "")
	if res.IsError || strings.Join(ids(out), ",") != a+","+c || out.NextCursor == "" {
		t.Fatalf("first page: %s %+v", textOf(res), out)
	}
	got := out.Sessions[0]
	want := SessionInfo{ID: a, Backend: "cli", Cwd: optsOf(d).DefaultCwd, Model: "gemini-x", Title: "first question about the parser", Turns: 2,
		LastUsed: "2026-11-22T10:04:00Z", Host: "here"}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	for _, w := range []string{a + "  cli  " + optsOf(d).DefaultCwd + "  gemini-x  2 turns  last used 2026-11-22T10:04:00Z", `"first question about the parser"`, "cursor " + `"` + out.NextCursor + `"`} {
		if !strings.Contains(textOf(res), w) {
			t.Errorf("text lacks %q:\n%s", w, textOf(res))
		}
	}
	res, out = listSessions(t, d, map[string]any{"limit": 2, "cursor": out.NextCursor}, "")
	if res.IsError || strings.Join(ids(out), ",") != b || out.NextCursor != "" {
		t.Fatalf("second page: %s %+v", textOf(res), out)
	}
	if _, out = listSessions(t, d, map[string]any{"cwd": "sub"}, ""); strings.Join(ids(out), ",") != b {
		t.Fatalf("in sub: %v", ids(out))
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"cursor": "bogus"}, `invalid cursor "bogus": pass the nextCursor`},
		{map[string]any{"limit": 101}, "validating /properties/limit: maximum: 101/1 is greater than 100"}, // the schema's range, as the SDK words it
		{map[string]any{"cwd": "missing"}, "missing"},
		{map[string]any{"limit": 1, "sessionId": a}, `unknown argument "sessionId"`},
	} {
		if res, _ := listSessions(t, d, tc.args, ""); !res.IsError || !strings.Contains(textOf(res), tc.want) {
			t.Errorf("%v: %s", tc.args, textOf(res))
		}
	}
}

// TestSessionsOverHTTPAreTheCallers: over HTTP with tokens, a client sees
// its own sessions and those without an owner, never another token's.
func TestSessionsOverHTTPAreTheCallers(t *testing.T) {
	t.Parallel()
	d, _ := newStubDeps(t)
	d = tick(d)
	open := chatOK(t, d, ChatInput{Prompt: "from stdio"})
	d = d.with(func(o *conversation.Options) { o.Remote, o.Authenticated = true, true })
	chat := func(token string) string {
		res, _, _ := d.chat(as(token), request(t, "chat", map[string]any{"prompt": "p"}), ChatInput{Prompt: "p"})
		return res.Meta["sessionId"].(string)
	}
	one, two := chat("id-one"), chat("id-two")
	if _, out := listSessions(t, d, nil, "id-one"); strings.Join(ids(out), ",") != one+","+open {
		t.Fatalf("token one sees %v", ids(out))
	}
	if _, out := listSessions(t, d, nil, "id-two"); strings.Join(ids(out), ",") != two+","+open {
		t.Fatalf("token two sees %v", ids(out))
	}
	d = d.with(func(o *conversation.Options) { o.ShareSessions = true })
	if _, out := listSessions(t, d, nil, "id-one"); len(out.Sessions) != 3 {
		t.Fatalf("with --share-sessions token one sees %v", ids(out))
	}
}

// TestSessionsThroughTheSDK: a client gets the structured content, valid
// against the tool's output schema, beside the text; an error is a tool
// error, not a protocol one.
func TestSessionsThroughTheSDK(t *testing.T) {
	t.Parallel()
	cs, _ := connectStub(t)
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "hello"}}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sessions", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("sessions: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out SessionsOutput
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Sessions) != 1 || out.Sessions[0].Title != "hello" || out.Sessions[0].Turns != 1 {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	if !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"hello"`) {
		t.Fatalf("text %q", res.Content[0].(*mcp.TextContent).Text)
	}
	for _, args := range []map[string]any{{"cursor": "bogus"}, {"limit": 0.5}, {"limit": 1000}} {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sessions", Arguments: args})
		if err != nil || !res.IsError {
			t.Fatalf("%v: %v %+v", args, err, res)
		}
	}
}
