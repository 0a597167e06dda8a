package server

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/access"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
)

var fakeGemini string

func TestMain(m *testing.M) {
	flag.Parse()
	code := geminitest.RunWithFake(m, &fakeGemini)
	if code == 0 {
		// Every call's goroutines (progress reporters, process waiters,
		// queue waiters) must have ended with the tests.
		if err := leaktest.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// harness is a server on the fake CLI and an SDK client connected to it in
// memory.
type harness struct {
	t        *testing.T
	client   *mcp.ClientSession
	log      string // the fake's invocation log
	stateDir string
	store    session.Store // shared by the servers it starts, as a restarted server shares its store
	env      []string
	home     string // the server's default cwd
	opts     options
	// requestContext, when set, ties calls to their HTTP requests.
	requestContext func(*mcp.CallToolRequest) context.Context
}

// options tune a harness; the zero value is the defaults used by most tests.
type options struct {
	timeout          time.Duration
	maxConcurrent    int
	progressInterval time.Duration
	maxAnswerBytes   int
	client           *mcp.ClientOptions
	noConnect        bool // build the harness without an in-memory client
	// allowedRoots, when set, are the server's roots; "home" stands for
	// the harness's default cwd.
	allowedRoots []string
	// remote, when set, tells the tools they serve HTTP with these options.
	remote          *HTTPOptions
	shareSessions   bool
	sessionIDInText bool
}

func newHarness(t *testing.T, opts ...options) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, log: filepath.Join(dir, "inv.jsonl"), stateDir: filepath.Join(dir, "state"), home: realDir(t, t.TempDir())}
	if len(opts) > 0 {
		h.opts = opts[0]
	}
	if h.opts.timeout == 0 {
		h.opts.timeout = 20 * time.Second
	}
	h.env = geminitest.FakeEnv(filepath.Join(dir, "fakehome"), h.log, 30*time.Second)
	if !h.opts.noConnect {
		h.connect()
	}
	return h
}

// connect starts a server (again, as a client restarting it would) and
// connects a client.
func (h *harness) connect() {
	t := h.t
	h.client = mcptest.Connect(t, h.newServer(), &mcptest.Options{ClientOptions: h.opts.client})
}

// newServer builds a server on the fake CLI with the harness's options.
func (h *harness) newServer() *mcp.Server {
	if h.store == nil {
		h.store = memstore.New(session.Options{})
		h.t.Cleanup(func() { h.store.Close() })
	}
	store := h.store
	var roots []string
	var err error
	if h.opts.allowedRoots != nil {
		var given []string
		for _, r := range h.opts.allowedRoots {
			if r == "home" {
				r = h.home
			}
			given = append(given, r)
		}
		if roots, err = access.ResolveRoots(given); err != nil {
			h.t.Fatal(err)
		}
	}
	runner := backend.Limit(cli.NewRunner(geminicli.Options{Gemini: fakeGemini, Env: h.env, Timeout: h.opts.timeout}, nil), h.opts.maxConcurrent)
	o := conversation.Options{Backend: runner, Store: store, DefaultCwd: h.home,
		ProgressInterval: h.opts.progressInterval, MaxAnswerBytes: h.opts.maxAnswerBytes, RequestContext: h.requestContext,
		AllowedRoots: roots, ShareSessions: h.opts.shareSessions, SessionIDInText: h.opts.sessionIDInText}
	if r := h.opts.remote; r != nil {
		o.Remote, o.Authenticated, o.Stateless = true, len(r.Tokens) > 0 || r.OAuth != nil, r.Stateless
	}
	return New("test", Families{Chat: &tools.Deps{Conv: conversation.New(o), MaxPromptBytes: 1 << 20}}, nil)
}

func realDir(t *testing.T, d string) string {
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (h *harness) call(name string, args map[string]any) (text string, sessionID string, isError bool) {
	h.t.Helper()
	text, meta, isError := h.callMeta(name, args)
	id, _ := meta["sessionId"].(string)
	return text, id, isError
}

func (h *harness) callMeta(name string, args map[string]any) (text string, meta mcp.Meta, isError bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.client.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("%s: protocol error %v", name, err)
	}
	if len(res.Content) != 1 {
		h.t.Fatalf("%s: %d content items", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		h.t.Fatalf("%s: content is %T", name, res.Content[0])
	}
	return tc.Text, res.Meta, res.IsError
}

func (h *harness) invocations() []geminitest.Invocation {
	inv, err := geminitest.ReadLog(h.log)
	if err != nil {
		h.t.Fatal(err)
	}
	return inv
}

func TestChatAndReply(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	work := realDir(t, t.TempDir())
	text, id, isErr := h.call("chat", map[string]any{"prompt": "Hello, who are you?", "model": "gemini-3-flash", "systemPrompt": "You are a helpful coding assistant.", "cwd": work})
	if isErr {
		t.Fatal(text)
	}
	if want := geminitest.Answer(1, "gemini-3-flash", "You are a helpful coding assistant.", "Hello, who are you?"); text != want {
		t.Fatalf("text %q, want %q", text, want)
	}
	if !session.IsUUID(id) {
		t.Fatalf("sessionId %q", id)
	}
	// No cwd: the session's recorded cwd is used.
	text, id2, isErr := h.call("chat-reply", map[string]any{"prompt": "Can you explain more about that?", "sessionId": id})
	if isErr || id2 != id || !strings.HasPrefix(text, "fake-gemini turn=2 ") {
		t.Fatalf("reply: %q %q %v", text, id2, isErr)
	}
	inv := h.invocations()
	if last := inv[len(inv)-1]; last.Cwd != work || !contains(last.Argv, "-r") || !contains(last.Argv, id) {
		t.Fatalf("reply ran %q in %s", last.Argv, last.Cwd)
	}
	// A restarted server still knows the session and where it lives.
	h.connect()
	text, id3, isErr := h.call("chat-reply", map[string]any{"prompt": "and after a restart?", "sessionId": id})
	if isErr || id3 != id || !strings.HasPrefix(text, "fake-gemini turn=3 ") {
		t.Fatalf("after restart: %q %q %v", text, id3, isErr)
	}
	rec, ok, err := h.store.Get(context.Background(), id)
	if err != nil || !ok || rec.Turns != 3 || rec.Cwd != work || rec.Model != "gemini-3-flash" {
		t.Fatalf("record %+v %v %v", rec, ok, err)
	}
}

func TestReplyWithoutSessionID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// With no session of its own, the server uses the CLI's latest in the
	// default cwd, as the specification says.
	text, _, isErr := h.call("chat-reply", map[string]any{"prompt": "nothing yet"})
	if !isErr || !strings.Contains(text, `could not resume session "latest"`) {
		t.Fatalf("no sessions at all: %q", text)
	}
	if inv := h.invocations(); len(inv) != 1 || !contains(inv[0].Argv, "latest") || inv[0].Cwd != h.home {
		t.Fatalf("invocations %+v", inv)
	}
	w1, w2 := realDir(t, t.TempDir()), realDir(t, t.TempDir())
	_, a, _ := h.call("chat", map[string]any{"prompt": "a", "cwd": w1})
	_, b, _ := h.call("chat", map[string]any{"prompt": "b", "cwd": w2})
	// Its own most recent session, wherever it is...
	if _, id, isErr := h.call("chat-reply", map[string]any{"prompt": "c"}); isErr || id != b {
		t.Fatalf("latest overall = %q, want %q", id, b)
	}
	// ...or its most recent in cwd.
	if _, id, isErr := h.call("chat-reply", map[string]any{"prompt": "d", "cwd": w1}); isErr || id != a {
		t.Fatalf("latest in w1 = %q, want %q", id, a)
	}
	// "latest" is the CLI's own latest in cwd.
	if _, id, isErr := h.call("chat-reply", map[string]any{"prompt": "e", "sessionId": "latest", "cwd": w1}); isErr || id != a {
		t.Fatalf("CLI latest in w1 = %q, want %q", id, a)
	}
	if _, id, isErr := h.call("chat-reply", map[string]any{"prompt": "f", "sessionId": "1", "cwd": w2}); isErr || id != b {
		t.Fatalf("index 1 in w2 = %q, want %q", id, b)
	}
}

func TestReplySessionErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	w1, w2 := realDir(t, t.TempDir()), realDir(t, t.TempDir())
	_, a, _ := h.call("chat", map[string]any{"prompt": "a", "cwd": w1})
	before := len(h.invocations())

	unknown := "b9aadb6c-5aca-4c65-b929-02b095cc2b94"
	text, _, isErr := h.call("chat-reply", map[string]any{"prompt": "x", "sessionId": unknown})
	if !isErr || !strings.HasPrefix(text, "Error executing gemini: unknown sessionId "+unknown) || strings.Contains(text, "Stderr:") {
		t.Fatalf("unknown id: %q", text)
	}
	text, _, isErr = h.call("chat-reply", map[string]any{"prompt": "x", "sessionId": a, "cwd": w2})
	if !isErr || !strings.Contains(text, "was started in "+w1) {
		t.Fatalf("wrong cwd: %q", text)
	}
	if n := len(h.invocations()); n != before {
		t.Fatalf("bad references reached the CLI (%d calls)", n-before)
	}
	// An unknown id with a cwd is tried there: it may be a person's session.
	text, _, isErr = h.call("chat-reply", map[string]any{"prompt": "x", "sessionId": unknown, "cwd": w2})
	if !isErr || !strings.Contains(text, "could not resume session \""+unknown+"\" in "+w2) || !strings.Contains(text, "\nStderr: ") {
		t.Fatalf("unknown id with cwd: %q", text)
	}
}

func TestBadInputNeverReachesTheCLI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	type badCall struct {
		tool string
		args map[string]any
		want string
	}
	cases := []badCall{
		{"chat", map[string]any{"prompt": "  \n"}, "prompt is empty"},
		{"chat", map[string]any{"prompt": "x", "model": "--yolo"}, "invalid model"},
		{"chat", map[string]any{"prompt": "x", "model": "a/../b"}, "invalid model"},
		{"chat", map[string]any{"prompt": "x", "cwd": "/no/such/dir"}, "does not exist"},
		{"chat", map[string]any{"prompt": "x", "cwd": file}, "not a directory"},
		{"chat", map[string]any{"prompt": strings.Repeat("x", 1<<20+1)}, "too large"},
		{"chat", map[string]any{"prompt": "x", "systemPrompt": "a\x00b"}, "NUL"},
		{"chat", map[string]any{"prompt": "x", "session_id": "y"}, `unknown argument "session_id"`},
		{"chat-reply", map[string]any{"prompt": "x", "sessionId": "--help"}, "invalid sessionId"},
		{"chat-reply", map[string]any{"prompt": "x", "sessionId": "b9aadb6c"}, "invalid sessionId"},
		{"chat-reply", map[string]any{"prompt": ""}, "prompt is empty"},
	}
	// Blank is not absent: a sessionId or continuation_id of white space
	// is refused like any other non-id, not taken for "the latest".
	for _, blank := range []string{" ", "\n", "\t", "\u00a0", " \u2003 "} {
		cases = append(cases,
			badCall{"chat-reply", map[string]any{"prompt": "x", "sessionId": blank}, "invalid sessionId"},
			badCall{"chat-reply", map[string]any{"prompt": "x", "continuation_id": blank}, "invalid sessionId"},
			badCall{"chat", map[string]any{"prompt": "x", "continuation_id": blank}, "invalid sessionId"})
	}
	for _, c := range cases {
		text, _, isErr := h.call(c.tool, c.args)
		if !isErr || !strings.HasPrefix(text, toolerr.ErrorPrefix) || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: %q, want an error containing %q", c.tool, truncArgs(c.args), text, c.want)
		}
	}
	// A missing prompt is refused by schema validation.
	res, err := h.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"model": "x"}})
	if err == nil && !res.IsError {
		t.Error("a call without prompt was accepted")
	}
	if inv := h.invocations(); len(inv) != 0 {
		t.Fatalf("%d invalid calls reached the CLI", len(inv))
	}
}

func truncArgs(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if s, ok := v.(string); ok && len(s) > 40 {
			v = s[:40] + "…"
		}
		out[k] = v
	}
	return out
}

func TestFailureFormat(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	text, id, isErr := h.call("chat", map[string]any{"prompt": "[[exit:144]]"})
	if !isErr || id != "" {
		t.Fatalf("isError %v id %q", isErr, id)
	}
	reason, stderr, ok := strings.Cut(text, "\nStderr: ")
	if !ok || !strings.HasPrefix(reason, "Error executing gemini: Gemini API error 400 Bad Request (exit 144): fake api error 400") {
		t.Fatalf("text %q", text)
	}
	if !strings.Contains(stderr, `"code": 400`) {
		t.Fatalf("stderr tail %q", stderr)
	}
	text, _, _ = h.call("chat", map[string]any{"prompt": "[[exit:41]]"})
	if !strings.Contains(text, "2026-06-18") || !strings.Contains(text, "GEMINI_API_KEY") {
		t.Fatalf("auth: %q", text)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestLongAnswersArePaged(t *testing.T) {
	t.Parallel()
	full := newHarness(t)
	whole, _, isErr := full.call("chat", map[string]any{"prompt": "[[stdout:3500]] long"})
	if isErr || len(whole) != 3500 {
		t.Fatalf("unpaged: %d bytes, isError %v", len(whole), isErr)
	}
	h := newHarness(t, options{maxAnswerBytes: 1000})
	text, meta, isErr := h.callMeta("chat", map[string]any{"prompt": "[[stdout:3500]] long"})
	if isErr {
		t.Fatal(text)
	}
	id, _ := meta["answerId"].(string)
	pages, _ := meta["pages"].(float64)
	if id == "" || pages != 4 || !session.IsUUID(fmt.Sprint(meta["sessionId"])) {
		t.Fatalf("meta %v", meta)
	}
	var got strings.Builder
	for page := 1; page <= 4; page++ {
		if page > 1 {
			text, meta, isErr = h.callMeta("chat-page", map[string]any{"answerId": id, "page": page})
			if isErr || meta["page"].(float64) != float64(page) {
				t.Fatalf("page %d: %q %v", page, text, meta)
			}
		}
		body, note, ok := strings.Cut(text, "\n\n[gemini-mcp-server: ")
		if !ok || len(body) > 1000 {
			t.Fatalf("page %d: %d bytes, note %v", page, len(body), ok)
		}
		if page < 4 && !strings.Contains(note, fmt.Sprintf("page %d of 4", page)) {
			t.Fatalf("page %d note %q", page, note)
		}
		got.WriteString(body)
	}
	if got.String() != whole {
		t.Fatal("the pages do not add up to the answer")
	}
	for _, bad := range []map[string]any{{"answerId": id, "page": 5}, {"answerId": id, "page": 0}, {"answerId": "nope", "page": 2}} {
		if text, _, isErr := h.callMeta("chat-page", bad); !isErr || !strings.HasPrefix(text, toolerr.ErrorPrefix) {
			t.Errorf("chat-page %v: %q", bad, text)
		}
	}
}

// firstCLIPid waits until the fake CLI has started and returns its pid.
func (h *harness) firstCLIPid(t *testing.T) int {
	t.Helper()
	return geminitest.WaitInvocation(t, h.log, 10*time.Second, func(geminitest.Invocation) bool { return true }).Pid
}
