package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/gemini"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// stubRunner answers every call at once with a new or the resumed session
// and records what it was asked.
type stubRunner struct {
	mu    sync.Mutex
	calls []gemini.Call
}

func (s *stubRunner) Run(_ context.Context, c gemini.Call) (*gemini.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	id := c.Resume
	if !gemini.IsUUID(id) {
		id = gemini.NewUUID()
	}
	return &gemini.Result{Response: "answer to " + c.Prompt, SessionID: id}, nil
}

func (s *stubRunner) last() gemini.Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[len(s.calls)-1]
}

func newStubDeps(t *testing.T) (*Deps, *stubRunner) {
	t.Helper()
	store, err := session.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	r := &stubRunner{}
	d := &Deps{Runner: r, Store: store, DefaultCwd: realTemp(t), MaxPromptBytes: 1 << 20}
	Register(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), d) // fills the defaults
	return d, r
}

// request builds a tools/call request as the SDK hands it to a handler; a
// token, when given, is the client id the HTTP auth check would set.
func request(t *testing.T, tool string, args map[string]any, token string) *mcp.CallToolRequest {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: raw}}
	if token != "" {
		req.Extra = &mcp.RequestExtra{Header: http.Header{ClientHeader: {token}}}
	}
	return req
}

func textOf(res *mcp.CallToolResult) string {
	return res.Content[0].(*mcp.TextContent).Text
}

// TestUnknownArgumentsFromSchema checks that each tool refuses exactly the
// arguments its generated schema does not list, and names those it takes.
func TestUnknownArgumentsFromSchema(t *testing.T) {
	d, r := newStubDeps(t)
	for _, tool := range []*mcp.Tool{chatTool(false), replyTool(), pageTool()} {
		schema := tool.InputSchema.(*jsonschema.Schema)
		if schema.AdditionalProperties != nil || schema.Schema != "" {
			t.Errorf("%s: the schema keeps keywords the Gemini CLI strips", tool.Name)
		}
		if got := knownArgs(tool.Name); len(got) != len(schema.Properties) {
			t.Errorf("%s: checks %v, schema has %d properties", tool.Name, got, len(schema.Properties))
		}
	}
	cases := []struct {
		tool string
		args map[string]any
		want string // "" for accepted
	}{
		{"chat", map[string]any{"prompt": "x", "session_id": "y"}, `unknown argument "session_id"; this tool takes prompt, model, systemPrompt, cwd`},
		{"chat", map[string]any{"prompt": "x", "sessionId": "y"}, `unknown argument "sessionId"`},
		{"chat", map[string]any{"prompt": "x", "model": "m", "systemPrompt": "s", "cwd": ""}, ""},
		{"chat-reply", map[string]any{"prompt": "x", "b": 1, "a": 2}, `unknown argument "a", "b"; this tool takes prompt, sessionId, model, systemPrompt, cwd`},
		{"chat-page", map[string]any{"answerId": "x", "page": 2, "pages": 3}, `unknown argument "pages"; this tool takes answerId, page`},
	}
	for _, c := range cases {
		req := request(t, c.tool, c.args, "")
		var res *mcp.CallToolResult
		switch c.tool {
		case "chat":
			var in ChatInput
			json.Unmarshal(req.Params.Arguments, &in)
			res, _, _ = d.chat(context.Background(), req, in)
		case "chat-reply":
			var in ReplyInput
			json.Unmarshal(req.Params.Arguments, &in)
			res, _, _ = d.chatReply(context.Background(), req, in)
		case "chat-page":
			var in PageInput
			json.Unmarshal(req.Params.Arguments, &in)
			res, _, _ = d.chatPage(context.Background(), req, in)
		}
		switch {
		case c.want == "" && res.IsError:
			t.Errorf("%s %v: %s", c.tool, c.args, textOf(res))
		case c.want != "" && (!res.IsError || !strings.Contains(textOf(res), c.want)):
			t.Errorf("%s %v: %q, want %q", c.tool, c.args, textOf(res), c.want)
		}
	}
	if len(r.calls) != 1 {
		t.Fatalf("%d calls reached the runner, want the one valid call", len(r.calls))
	}
}

// TestReplyTargets checks which session and directory chat-reply picks,
// on stdio and for HTTP clients with tokens, in process.
func TestReplyTargets(t *testing.T) {
	d, r := newStubDeps(t)
	sub := filepath.Join(d.DefaultCwd, "sub")
	if err := mkdir(sub); err != nil {
		t.Fatal(err)
	}
	chat := func(cwd, token string) string {
		res, _, _ := d.chat(context.Background(), request(t, "chat", map[string]any{"prompt": "p", "cwd": cwd}, token), ChatInput{Prompt: "p", Cwd: cwd})
		if res.IsError {
			t.Fatal(textOf(res))
		}
		return res.Meta["sessionId"].(string)
	}
	reply := func(in ReplyInput, token string) (gemini.Call, string, bool) {
		before := len(r.calls)
		res, _, _ := d.chatReply(context.Background(), request(t, "chat-reply", map[string]any{"prompt": "p"}, token), in)
		if res.IsError {
			return gemini.Call{}, textOf(res), false
		}
		if len(r.calls) != before+1 {
			t.Fatal("no call")
		}
		return r.last(), "", true
	}

	a := chat("", "")
	b := chat(sub, "")
	for _, c := range []struct {
		name       string
		in         ReplyInput
		resume     string
		dir        string
		errContain string
	}{
		{"newest", ReplyInput{Prompt: "p"}, b, sub, ""},
		{"newest in cwd", ReplyInput{Prompt: "p", Cwd: d.DefaultCwd}, a, d.DefaultCwd, ""},
		{"by id", ReplyInput{Prompt: "p", SessionID: a}, a, d.DefaultCwd, ""},
		{"by id, other cwd", ReplyInput{Prompt: "p", SessionID: a, Cwd: "sub"}, "", "", "was started in"},
		{"latest", ReplyInput{Prompt: "p", SessionID: "latest", Cwd: "sub"}, "latest", sub, ""},
		{"unknown id", ReplyInput{Prompt: "p", SessionID: "b9aadb6c-5aca-4c65-b929-02b095cc2b94"}, "", "", "unknown sessionId"},
	} {
		call, msg, ok := reply(c.in, "")
		if c.errContain != "" {
			if ok || !strings.Contains(msg, c.errContain) {
				t.Errorf("stdio, %s: %q, want an error with %q", c.name, msg, c.errContain)
			}
			continue
		}
		if !ok || call.Resume != c.resume || call.Dir != c.dir {
			t.Errorf("stdio, %s: resumed %q in %s (%s), want %q in %s", c.name, call.Resume, call.Dir, msg, c.resume, c.dir)
		}
	}

	// Over HTTP with tokens: each token sees its own.
	d.Remote, d.Authenticated = true, true
	t1 := chat("", "id-one")
	t2 := chat("", "id-two")
	if call, msg, ok := reply(ReplyInput{Prompt: "p"}, "id-one"); !ok || call.Resume != t1 {
		t.Errorf("token one's newest: %q %s", call.Resume, msg)
	}
	if _, msg, ok := reply(ReplyInput{Prompt: "p", SessionID: t2}, "id-one"); ok || !strings.Contains(msg, "unknown sessionId") {
		t.Errorf("token one reached token two's session: %s", msg)
	}
	if _, msg, ok := reply(ReplyInput{Prompt: "p", SessionID: "latest"}, "id-one"); ok || !strings.Contains(msg, "--share-sessions") {
		t.Errorf("token one used latest: %s", msg)
	}
	// Sessions without owner (stdio's) stay open by id.
	if call, msg, ok := reply(ReplyInput{Prompt: "p", SessionID: a}, "id-two"); !ok || call.Resume != a {
		t.Errorf("an unowned session by id: %s", msg)
	}
}
