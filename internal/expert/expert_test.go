package expert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeBackend answers every turn at once, in a new or the continued
// session, and keeps the turns it was given.
type fakeBackend struct {
	name string // "api" or a CLI backend's name
	err  error  // returned instead of an answer, when set

	mu    sync.Mutex
	turns []backend.Turn
}

func (f *fakeBackend) Name() string { return f.name }

// Family is the API's for a fake named "api", else the Gemini CLI's.
func (f *fakeBackend) Family() config.Family {
	if f.name == string(config.BackendAPI) {
		return config.FamilyAPI
	}
	return config.FamilyCLI
}
func (f *fakeBackend) Close() {}
func (f *fakeBackend) Run(_ context.Context, t backend.Turn) (*backend.Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.turns = append(f.turns, t)
	if f.err != nil {
		return nil, f.err
	}
	id := t.Session
	if !session.IsUUID(id) {
		id = session.NewUUID()
	}
	a := &backend.Answer{SessionID: id, Text: fmt.Sprintf("answer %d", len(f.turns))}
	if f.name == "api" {
		a.Usage = &backend.Usage{PromptTokens: 100, OutputTokens: 20, ThinkingTokens: 7}
	} else {
		if t.ThinkingMode != "" {
			a.NotApplied = append(a.NotApplied, "thinking_mode: the Gemini CLI takes no per-call thinking budget")
		}
		if t.Temperature != nil {
			a.NotApplied = append(a.NotApplied, "temperature: the Gemini CLI takes no per-call temperature")
		}
	}
	return a, nil
}

func (f *fakeBackend) last() backend.Turn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.turns[len(f.turns)-1]
}

func (f *fakeBackend) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.turns)
}

// fakeFiles stands in for the file context: every entry is a file whose
// text is its name, numbered; entries the thread was already sent are
// skipped (as filectx.Service does, through a filectx.MemorySent);
// entries starting with "/" are outside the sandbox. changes, when set,
// reads precommit's changes.
type fakeFiles struct {
	sent    filectx.MemorySent
	changes func(ctx context.Context, path string, staged, unstaged bool) (*filectx.ChangeSet, error)
}

func (f *fakeFiles) Gather(ctx context.Context, sessionID string, entries []string) (*filectx.Files, error) {
	seen := filectx.Seen{}
	if sessionID != "" {
		seen, _ = f.sent.Sent(ctx, sessionID)
	}
	var b strings.Builder
	files := &filectx.Files{}
	for _, e := range entries {
		if strings.HasPrefix(e, "/") {
			return nil, &filectx.Error{Category: filectx.CategorySecurity, Field: "files", Message: "Path outside sandbox: " + e + "; give paths inside the project root"}
		}
		if _, ok := seen[e]; ok {
			files.Skipped = append(files.Skipped, filectx.FileNote{Path: e, Reason: "already sent in this conversation"})
			continue
		}
		fmt.Fprintf(&b, "--- %s ---\n     1\tcontent of %s\n", e, e)
		files.Processed = append(files.Processed, filectx.FileNote{Path: e})
	}
	files.Text = b.String()
	return files, nil
}

func (f *fakeFiles) Record(ctx context.Context, sessionID string, files *filectx.Files) error {
	if sessionID == "" || len(files.Processed) == 0 {
		return nil
	}
	return f.sent.Add(ctx, sessionID, files.Processed)
}

func (f *fakeFiles) Changes(ctx context.Context, path string, staged, unstaged bool, _ func() int) (*filectx.ChangeSet, error) {
	if f.changes == nil {
		return nil, errors.New("no changes")
	}
	return f.changes(ctx, path, staged, unstaged)
}

type harness struct {
	backend *fakeBackend
	store   session.Store
	conv    *conversation.Service
	deps    *Deps
	client  *mcp.ClientSession
}

func newHarness(t *testing.T, backendName string, configure func(*Deps)) *harness {
	t.Helper()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	return newHarnessOn(t, backendName, store, configure, nil)
}

// newHarnessOn starts the tools on store; setup, when set, adds to the
// server before it is connected.
func newHarnessOn(t *testing.T, backendName string, store session.Store, configure func(*Deps), setup func(*mcp.Server)) *harness {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{name: backendName}
	conv := conversation.New(conversation.Options{Backend: fb, Store: store, DefaultCwd: root})
	s := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	d := &Deps{Turns: conv, Files: &fakeFiles{}, MaxArgBytes: 1 << 20}
	if configure != nil {
		configure(d)
	}
	addAll(s, d)
	if setup != nil {
		setup(s)
	}
	cs := mcptest.Connect(t, s, nil)
	return &harness{backend: fb, store: store, conv: conv, deps: d, client: cs}
}

func (h *harness) call(t *testing.T, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	return h.client.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
}

func (h *harness) mustCall(t *testing.T, tool string, args map[string]any) (string, mcp.Meta) {
	t.Helper()
	res, err := h.call(t, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: %s", tool, res.Content[0].(*mcp.TextContent).Text)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.Meta
}

// wireErr is what a client sees of a JSON-RPC error.
func wireErr(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T) is not a JSON-RPC error", err, err)
	}
	return we
}

func TestAnalyzeResultInSeedFormat(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	text, meta := h.mustCall(t, "analyze", map[string]any{"files": []string{"main.go", "README.md"}, "question": "How does it start?", "temperature": 0.2})
	turn := h.backend.last()
	id := turn.Session
	if id != "" {
		t.Fatalf("a call without continuation_id continued %q", id)
	}
	cid, _ := meta["continuationId"].(string)
	if !session.IsUUID(cid) {
		t.Fatalf("continuationId %v", meta["continuationId"])
	}
	want := "answer 1\n\n## Metadata\n- tool: analyze\n- thinking_mode: medium\n- temperature: 0.2\n- tokens_used: 127\n- thinking_tokens: 7\n- response_time: " // then the time
	if !strings.HasPrefix(text, want) {
		t.Fatalf("text:\n%s\nwant it to start with:\n%s", text, want)
	}
	if tail := "\n\n## Files Processed\n- main.go\n- README.md\n\n## Continuation ID: " + cid; !strings.HasSuffix(text, tail) {
		t.Fatalf("text:\n%s\nwant it to end with:\n%s", text, tail)
	}
	if meta["tokensUsed"] != float64(127) || meta["thinkingTokens"] != float64(7) || meta["thinkingMode"] != "medium" {
		t.Errorf("meta %v", meta)
	}
	if _, ok := meta["responseTimeMs"].(float64); !ok {
		t.Errorf("meta has no responseTimeMs: %v", meta)
	}
	processed, _ := json.Marshal(meta["filesProcessed"])
	if string(processed) != `[{"path":"main.go"},{"path":"README.md"}]` {
		t.Errorf("filesProcessed %s", processed)
	}
	// The prompt: the tool's role as system prompt, the arguments under
	// their labels, the files with line numbers; the tuning on the turn.
	if turn.SystemPrompt != specByName("analyze").role {
		t.Errorf("system prompt %q", turn.SystemPrompt)
	}
	// The files come first: the stable context the API backend may
	// cache (ContextLen bytes).
	wantFiles := "## Files\n--- main.go ---\n     1\tcontent of main.go\n--- README.md ---\n     1\tcontent of README.md\n\n"
	wantPrompt := wantFiles + "## Question\nHow does it start?\n\n## Analysis type\ngeneral"
	if turn.Prompt != wantPrompt || turn.ContextLen != len(wantFiles) {
		t.Errorf("prompt:\n%q (context %d bytes)\nwant:\n%q (context %d bytes)", turn.Prompt, turn.ContextLen, wantPrompt, len(wantFiles))
	}
	if turn.ThinkingMode != "medium" || turn.Temperature == nil || *turn.Temperature != 0.2 {
		t.Errorf("tuning %q %v", turn.ThinkingMode, turn.Temperature)
	}
	rec, ok, err := h.store.Get(context.Background(), cid)
	if err != nil || !ok || rec.Turns != 1 || !strings.HasPrefix(rec.Title, "analyze: How does it start?") {
		t.Fatalf("record %+v %v %v", rec, ok, err)
	}
}

// TestNotAppliedOnCLIBackends: where the backend cannot apply the
// tuning, the result says so, in the text and in _meta.
func TestNotAppliedOnCLIBackends(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "warm", nil)
	text, meta := h.mustCall(t, "thinkdeep", map[string]any{"current_analysis": "We shard by tenant.", "focus_areas": []string{"performance", "architecture"}})
	if h.backend.last().ThinkingMode != "high" {
		t.Errorf("thinkdeep's default thinking_mode not passed: %q", h.backend.last().ThinkingMode)
	}
	if !strings.Contains(text, "- tokens_used: not reported by this backend\n") || !strings.Contains(text, "- not_applied: thinking_mode: ") {
		t.Errorf("text:\n%s", text)
	}
	if na, _ := meta["notApplied"].([]any); len(na) != 1 {
		t.Errorf("notApplied %v", meta["notApplied"])
	}
	if strings.Contains(text, "## Files Processed") {
		t.Errorf("a call without files lists files:\n%s", text)
	}
	if !strings.Contains(h.backend.last().Prompt, "## Focus areas\nperformance, architecture") {
		t.Errorf("prompt %q", h.backend.last().Prompt)
	}
}

// TestContinuationAcrossTools: analyze, then codereview on the same
// thread, then a turn continued as chat-reply continues it; the files
// analyze sent are not sent again.
func TestContinuationAcrossTools(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"api", "warm"} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, name, nil)
			_, meta := h.mustCall(t, "analyze", map[string]any{"files": []string{"a.go", "b.go"}, "question": "What is it?"})
			id := meta["continuationId"].(string)
			text, meta2 := h.mustCall(t, "codereview", map[string]any{"files": []string{"a.go", "c.go"}, "context": "A parser.", "continuation_id": id})
			if meta2["continuationId"] != id {
				t.Fatalf("continued into %v, want %s", meta2["continuationId"], id)
			}
			turn := h.backend.last()
			if turn.Session != id {
				t.Fatalf("codereview ran in session %q, want %s", turn.Session, id)
			}
			if turn.SystemPrompt != specByName("codereview").role {
				t.Errorf("system prompt %q", turn.SystemPrompt)
			}
			if strings.Contains(turn.Prompt, "content of a.go") || !strings.Contains(turn.Prompt, "content of c.go") {
				t.Errorf("dedup: prompt %q", turn.Prompt)
			}
			if !strings.Contains(text, "\n## Files Processed\n- c.go\n\n## Files Skipped\n- a.go: already sent in this conversation\n") {
				t.Errorf("text:\n%s", text)
			}
			skipped, _ := json.Marshal(meta2["filesSkipped"])
			if string(skipped) != `[{"path":"a.go","reason":"already sent in this conversation"}]` {
				t.Errorf("filesSkipped %s", skipped)
			}
			reply := conversation.Request{Continue: true, Session: id, Turn: backend.Turn{Prompt: "Which issue first?"},
				Render: func(context.Context, conversation.Outcome) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				}}
			if _, err := h.conv.Do(context.Background(), reply); err != nil || h.backend.last().Session != id {
				t.Fatalf("the reply ran in %q: %v", h.backend.last().Session, err)
			}
			rec, _, _ := h.store.Get(context.Background(), id)
			if rec.Turns != 3 {
				t.Errorf("turns %d, want 3", rec.Turns)
			}
		})
	}
}

// TestContinuationIDAsWritten: a continuation_id in capitals and with
// spaces around it names the same thread, whose files are not sent again
// (the files were looked up under the id as written, and sent anew).
func TestContinuationIDAsWritten(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	_, meta := h.mustCall(t, "analyze", map[string]any{"files": []string{"a.go"}, "question": "What is it?"})
	id := meta["continuationId"].(string)
	_, meta2 := h.mustCall(t, "analyze", map[string]any{"files": []string{"a.go"}, "question": "And then?", "continuation_id": " " + strings.ToUpper(id) + " "})
	if meta2["continuationId"] != id {
		t.Fatalf("continued into %v, want %s", meta2["continuationId"], id)
	}
	if p := h.backend.last().Prompt; strings.Contains(p, "content of a.go") {
		t.Errorf("a.go was sent again: %q", p)
	}
}

func TestPrecommitReadsChanges(t *testing.T) {
	t.Parallel()
	var got []any
	h := newHarness(t, "api", func(d *Deps) {
		d.Files = &fakeFiles{changes: func(_ context.Context, path string, staged, unstaged bool) (*filectx.ChangeSet, error) {
			got = []any{path, staged, unstaged}
			return &filectx.ChangeSet{Text: "diff --git a/x.go b/x.go\n+secret", Processed: []filectx.FileNote{{Path: "x.go"}}}, nil
		}}
	})
	text, _ := h.mustCall(t, "precommit", map[string]any{"path": "repo", "include_unstaged": false, "original_request": "Add x"})
	if fmt.Sprint(got) != "[repo true false]" {
		t.Errorf("changes asked for %v", got)
	}
	want := "## Changes\ndiff --git a/x.go b/x.go\n+secret\n\n## Review type\nfull\n\n## Original request\nAdd x\n\n## Repository\nrepo (staged changes: yes, unstaged changes: no)"
	if p := h.backend.last().Prompt; p != want {
		t.Errorf("prompt:\n%q\nwant:\n%q", p, want)
	}
	if !strings.Contains(text, "## Files Processed\n- x.go") {
		t.Errorf("text:\n%s", text)
	}
}

// TestContinuationOfAnotherClientRefused: over HTTP with tokens, a
// continuation_id started with another token is as unknown as any, as for
// chat-reply.
func TestContinuationOfAnotherClientRefused(t *testing.T) {
	t.Parallel()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{name: "api"}
	conv := conversation.New(conversation.Options{Backend: fb, Store: store, DefaultCwd: root, Remote: true, Authenticated: true})
	s := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	d := &Deps{Turns: conv}
	addAll(s, d)
	call := func(token, args string) (*mcp.CallToolResult, error) {
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "thinkdeep", Arguments: json.RawMessage(args)}}
		return d.handler(specByName("thinkdeep"))(identity.With(context.Background(), identity.ForToken(token)), req)
	}
	res, err := call("alice", `{"current_analysis":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Meta["continuationId"].(string)
	_, err = call("bob", `{"current_analysis":"y","continuation_id":"`+id+`"}`)
	we := wireErr(t, err)
	if we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(string(we.Data), `"field":"continuation_id"`) || !strings.Contains(we.Message, "unknown sessionId") {
		t.Fatalf("code %d message %q data %s", we.Code, we.Message, we.Data)
	}
	if _, err := call("alice", `{"current_analysis":"y","continuation_id":"`+id+`"}`); err != nil {
		t.Fatalf("the owner's continuation: %v", err)
	}
	if fb.count() != 2 {
		t.Fatalf("%d turns, want 2", fb.count())
	}
}

// all are the expert tools, in the server's order.
var all = []*Tool{Thinkdeep, Analyze, Codereview, Debug, Precommit}

// addAll adds the expert tools and their prompts to s, as the server's
// registry does.
func addAll(s *mcp.Server, d *Deps) {
	for _, t := range all {
		t.Add(s, d)
		t.AddPrompt(s)
	}
}

// specByName finds the expert tool named name.
func specByName(name string) *Tool {
	for _, t := range all {
		if t.name == name {
			return t
		}
	}
	return nil
}
