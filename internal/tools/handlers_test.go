package tools

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// stubRunner is a backend that answers every turn at once with a new or
// the resumed session and records what it was asked.
type stubRunner struct {
	mu    sync.Mutex
	calls []backend.Turn
	// answer, when set, fills in what the backend reports with the text.
	answer backend.Answer
	name   string // as --backend spells it; "" for "stub", a CLI backend
}

func (s *stubRunner) Name() string {
	if s.name == "" {
		return "stub"
	}
	return s.name
}

// Family is the API's for a stub named "api", else the Gemini CLI's.
func (s *stubRunner) Family() config.Family {
	if s.name == string(config.BackendAPI) {
		return config.FamilyAPI
	}
	return config.FamilyCLI
}
func (s *stubRunner) Close() {}

func (s *stubRunner) Run(_ context.Context, c backend.Turn) (*backend.Answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	id := c.Session
	if !session.IsUUID(id) {
		id = session.NewUUID()
	}
	a := s.answer
	a.Text, a.SessionID = "answer to "+c.Prompt, id
	return &a, nil
}

func (s *stubRunner) last() backend.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[len(s.calls)-1]
}

func newStubDeps(t *testing.T) (*Deps, *stubRunner) {
	t.Helper()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	r := &stubRunner{}
	d := &Deps{Conv: newConv(conversation.Options{Backend: r, Store: store, DefaultCwd: realTemp(t)}), MaxPromptBytes: 1 << 20}
	addAll(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), d)
	return d, r
}

// with returns the tools of d on a pipeline whose options change makes
// from d's: a server's configuration is complete before it serves, so a
// test that changes it builds the tools anew, on the same store.
func (d *Deps) with(change func(*conversation.Options)) *Deps {
	o := optsOf(d)
	change(&o)
	return &Deps{Conv: newConv(o), MaxPromptBytes: d.MaxPromptBytes, Files: d.Files}
}

// request builds a tools/call request as the SDK hands it to a handler.
func request(t *testing.T, tool string, args map[string]any) *mcp.CallToolRequest {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: raw}}
}

// as is the context of a call from the holder of the token whose id is
// token, as the HTTP auth check names its caller (no one for "").
func as(token string) context.Context {
	if token == "" {
		return context.Background()
	}
	return identity.With(context.Background(), identity.ForToken(token))
}

func textOf(res *mcp.CallToolResult) string {
	return res.Content[0].(*mcp.TextContent).Text
}

// TestUnknownArgumentsFromSchema checks that each tool refuses exactly the
// arguments its generated schema does not list, and names those it takes.
func TestUnknownArgumentsFromSchema(t *testing.T) {
	t.Parallel()
	d, r := newStubDeps(t)
	for _, c := range []struct {
		tool  *mcp.Tool
		known []string
	}{{chatTool(false), inputTypeOf[ChatInput]().sc.PropertyOrder}, {replyTool(), inputTypeOf[ReplyInput]().sc.PropertyOrder}, {pageTool(), inputTypeOf[PageInput]().sc.PropertyOrder}, {sessionsTool(), inputTypeOf[SessionsInput]().sc.PropertyOrder}} {
		schema := c.tool.InputSchema.(*jsonschema.Schema)
		if schema.AdditionalProperties != nil || schema.Schema != "" {
			t.Errorf("%s: the schema keeps keywords the Gemini CLI strips", c.tool.Name)
		}
		if !slices.Equal(c.known, schema.PropertyOrder) {
			t.Errorf("%s: checks %v, schema has %v", c.tool.Name, c.known, schema.PropertyOrder)
		}
	}
	cases := []struct {
		tool string
		args map[string]any
		want string // "" for accepted
	}{
		{"chat", map[string]any{"prompt": "x", "session_id": "y"}, `unknown argument "session_id"; this tool takes prompt, model, systemPrompt, cwd, files, file_search, continuation_id, temperature, thinking_mode`},
		{"chat", map[string]any{"prompt": "x", "sessionId": "y"}, `unknown argument "sessionId"`},
		{"chat", map[string]any{"prompt": "x", "model": "m", "systemPrompt": "s", "cwd": ""}, ""},
		{"chat-reply", map[string]any{"prompt": "x", "b": 1, "a": 2}, `unknown argument "a", "b"; this tool takes prompt, sessionId, model, systemPrompt, cwd, files, file_search, continuation_id, temperature, thinking_mode`},
		{"chat-page", map[string]any{"answerId": "x", "page": 2, "pages": 3}, `unknown argument "pages"; this tool takes answerId, page`},
	}
	for _, c := range cases {
		req := request(t, c.tool, c.args)
		var res *mcp.CallToolResult
		switch c.tool {
		case "chat":
			res, _ = handle(d.chat)(context.Background(), req)
		case "chat-reply":
			res, _ = handle(d.chatReply)(context.Background(), req)
		case "chat-page":
			res, _ = handle(d.chatPage)(context.Background(), req)
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
	t.Parallel()
	d, r := newStubDeps(t)
	sub := filepath.Join(optsOf(d).DefaultCwd, "sub")
	if err := mkdir(sub); err != nil {
		t.Fatal(err)
	}
	chat := func(cwd, token string) string {
		res, _, _ := d.chat(as(token), request(t, "chat", map[string]any{"prompt": "p", "cwd": cwd}), ChatInput{Prompt: "p", Cwd: cwd})
		if res.IsError {
			t.Fatal(textOf(res))
		}
		return res.Meta["sessionId"].(string)
	}
	reply := func(in ReplyInput, token string) (backend.Turn, string, bool) {
		before := len(r.calls)
		res, _, _ := d.chatReply(as(token), request(t, "chat-reply", map[string]any{"prompt": "p"}), in)
		if res.IsError {
			return backend.Turn{}, textOf(res), false
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
		{"newest in cwd", ReplyInput{Prompt: "p", Cwd: optsOf(d).DefaultCwd}, a, optsOf(d).DefaultCwd, ""},
		{"by id", ReplyInput{Prompt: "p", SessionID: a}, a, optsOf(d).DefaultCwd, ""},
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
		if !ok || call.Session != c.resume || call.Dir != c.dir {
			t.Errorf("stdio, %s: resumed %q in %s (%s), want %q in %s", c.name, call.Session, call.Dir, msg, c.resume, c.dir)
		}
	}

	// Over HTTP with tokens: each token sees its own.
	d = d.with(func(o *conversation.Options) { o.Remote, o.Authenticated = true, true })
	t1 := chat("", "id-one")
	t2 := chat("", "id-two")
	if call, msg, ok := reply(ReplyInput{Prompt: "p"}, "id-one"); !ok || call.Session != t1 {
		t.Errorf("token one's newest: %q %s", call.Session, msg)
	}
	if _, msg, ok := reply(ReplyInput{Prompt: "p", SessionID: t2}, "id-one"); ok || !strings.Contains(msg, "unknown sessionId") {
		t.Errorf("token one reached token two's session: %s", msg)
	}
	if _, msg, ok := reply(ReplyInput{Prompt: "p", SessionID: "latest"}, "id-one"); ok || !strings.Contains(msg, "--share-sessions") {
		t.Errorf("token one used latest: %s", msg)
	}
	// Sessions without owner (stdio's) stay open by id.
	if call, msg, ok := reply(ReplyInput{Prompt: "p", SessionID: a}, "id-two"); !ok || call.Session != a {
		t.Errorf("an unowned session by id: %s", msg)
	}
}

// TestUsageAndNotAppliedInMeta checks that what a backend reports beside
// the answer (token usage, tuning it could not apply) reaches the result's
// _meta, and that nothing is added when it reports nothing.
func TestUsageAndNotAppliedInMeta(t *testing.T) {
	t.Parallel()
	d, r := newStubDeps(t)
	res, _, _ := d.chat(context.Background(), request(t, "chat", map[string]any{"prompt": "p"}), ChatInput{Prompt: "p"})
	if res.IsError || res.Meta["usage"] != nil || res.Meta["notApplied"] != nil {
		t.Fatalf("without usage: %v %v", res.IsError, res.Meta)
	}
	usage := &backend.Usage{PromptTokens: 3, OutputTokens: 5, ThinkingTokens: 7}
	r.answer = backend.Answer{Usage: usage, NotApplied: []string{"temperature: no"}}
	res, _, _ = d.chat(context.Background(), request(t, "chat", map[string]any{"prompt": "p"}), ChatInput{Prompt: "p"})
	if res.IsError || res.Meta["usage"] != usage || len(res.Meta["notApplied"].([]string)) != 1 {
		t.Fatalf("with usage: %v", res.Meta)
	}
	raw, err := json.Marshal(res.Meta["usage"])
	if err != nil || string(raw) != `{"promptTokens":3,"outputTokens":5,"thinkingTokens":7}` {
		t.Fatalf("usage as clients see it: %s %v", raw, err)
	}
}

// TestSessionBelongsToItsBackend: a session records the family of the
// backend that started it; the other family refuses to continue it, naming
// both, and never picks it as "the most recent session"; records written
// before the family was kept count as the CLI's.
func TestSessionBelongsToItsBackend(t *testing.T) {
	t.Parallel()
	d, cliStub := newStubDeps(t)
	apiStub := &stubRunner{name: "api"}
	chat := func() string {
		t.Helper()
		res, _, _ := d.chat(context.Background(), request(t, "chat", map[string]any{"prompt": "p"}), ChatInput{Prompt: "p"})
		if res.IsError {
			t.Fatal(textOf(res))
		}
		return res.Meta["sessionId"].(string)
	}
	reply := func(id string) (*mcp.CallToolResult, string) {
		t.Helper()
		args := map[string]any{"prompt": "q"}
		if id != "" {
			args["sessionId"] = id
		}
		res, _, _ := d.chatReply(context.Background(), request(t, "chat-reply", args), ReplyInput{Prompt: "q", SessionID: id})
		return res, textOf(res)
	}
	family := func(id string) string {
		t.Helper()
		rec, ok, err := optsOf(d).Store.Get(context.Background(), id)
		if !ok || err != nil {
			t.Fatalf("no record of %s: %v", id, err)
		}
		return rec.Backend
	}

	onCLI := chat()
	d = d.with(func(o *conversation.Options) { o.Backend = apiStub })
	onAPI := chat()
	if family(onCLI) != "cli" || family(onAPI) != "api" {
		t.Fatalf("recorded families %q, %q", family(onCLI), family(onAPI))
	}
	d = d.with(func(o *conversation.Options) { o.Backend = cliStub })
	if res, text := reply(onCLI); res.IsError {
		t.Fatal(text) // onCLI is now the newest session
	}
	if res, text := reply(onAPI); !res.IsError || !strings.Contains(text, "was started on the Gemini API backend (--backend api), and this server runs the Gemini CLI backends") ||
		!strings.Contains(text, "Start a new session with chat") {
		t.Errorf("the CLI continued an API session: %s", text)
	}

	d = d.with(func(o *conversation.Options) { o.Backend = apiStub })
	calls := len(apiStub.calls)
	if res, text := reply(onCLI); !res.IsError || !strings.Contains(text, "was started on the Gemini CLI backends (--backend warm or oneshot), and this server runs the Gemini API backend") {
		t.Errorf("the API continued a CLI session: %s", text)
	}
	if res, text := reply("latest"); !res.IsError || !strings.Contains(text, "names a Gemini CLI session") {
		t.Errorf("the API took \"latest\": %s", text)
	}
	if len(apiStub.calls) != calls {
		t.Fatal("a refused call reached the backend")
	}
	// Without sessionId, the newest session of this family, not the newest.
	if res, text := reply(""); res.IsError || apiStub.last().Session != onAPI {
		t.Errorf("API reply without sessionId: %s, continued %q, want %s", text, apiStub.last().Session, onAPI)
	}

	// A record from before the family was kept belongs to the CLI.
	old := session.NewUUID()
	if _, err := optsOf(d).Store.Touch(context.Background(), old, session.Turn{Cwd: optsOf(d).DefaultCwd}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if res, text := reply(old); !res.IsError || !strings.Contains(text, "was started on the Gemini CLI backends") {
		t.Errorf("the API continued an old record: %s", text)
	}
	d = d.with(func(o *conversation.Options) { o.Backend = cliStub })
	if res, text := reply(old); res.IsError || cliStub.last().Session != old {
		t.Errorf("the CLI refused an old record: %s", text)
	}
}

// TestUnkeptTurn: a turn the backend answered but could not keep (the API
// backend's history in a full store) is returned with
// _meta.sessionSaved false and a note, and its record stays as it was.
func TestUnkeptTurn(t *testing.T) {
	t.Parallel()
	d, r := newStubDeps(t)
	ctx := context.Background()
	req := request(t, "chat", map[string]any{"prompt": "first"})
	res, _, _ := d.chat(ctx, req, ChatInput{Prompt: "first"})
	id, _ := res.Meta["sessionId"].(string)
	if res.IsError || id == "" {
		t.Fatalf("chat: %+v", res)
	}
	r.answer.Unsaved = errors.New("OOM command not allowed")
	req = request(t, "chat-reply", map[string]any{"prompt": "second", "sessionId": id})
	res, _, _ = d.chatReply(ctx, req, ReplyInput{Prompt: "second", SessionID: id})
	if res.IsError || res.Meta["sessionSaved"] != false || res.Meta["sessionId"] != id {
		t.Fatalf("chat-reply: %+v", res)
	}
	note := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
	if !strings.Contains(note, "this turn could not be saved (OOM command not allowed)") || !strings.Contains(note, "without this exchange") {
		t.Errorf("note %q", note)
	}
	if rec, _, err := optsOf(d).Store.Get(ctx, id); err != nil || rec.Turns != 1 {
		t.Errorf("record after the unkept turn: %d turns, %v; want 1", rec.Turns, err)
	}
}
