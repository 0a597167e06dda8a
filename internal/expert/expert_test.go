package expert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
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
func (f *fakeBackend) Close()       {}
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

func (f *fakeFiles) Changes(ctx context.Context, path string, staged, unstaged bool) (*filectx.ChangeSet, error) {
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

// TestSchemasFollowSeed checks the schemas against the expert tools' specification: its
// names, required arguments, enums and defaults.
func TestSchemasFollowSeed(t *testing.T) {
	t.Parallel()
	type want struct {
		required []string
		enums    map[string]string // argument: its values, joined by |
		defaults map[string]any
		optional []string
	}
	modes := "minimal|low|medium|high|max"
	seed := map[string]want{
		"thinkdeep": {required: []string{"current_analysis"}, optional: []string{"problem_context", "focus_areas", "files", "continuation_id"},
			enums: map[string]string{"thinking_mode": modes}, defaults: map[string]any{"thinking_mode": "high"}},
		"analyze": {required: []string{"files", "question"}, optional: []string{"continuation_id"},
			enums:    map[string]string{"analysis_type": "architecture|performance|security|quality|general", "thinking_mode": modes},
			defaults: map[string]any{"analysis_type": "general", "thinking_mode": "medium"}},
		"codereview": {required: []string{"files", "context"}, optional: []string{"standards"},
			enums:    map[string]string{"review_type": "full|security|performance|quick", "severity_filter": "critical|high|medium|all"},
			defaults: map[string]any{"review_type": "full", "severity_filter": "all", "thinking_mode": "medium"}},
		"debug": {required: []string{"error_description"}, optional: []string{"error_context", "files", "previous_attempts", "runtime_info"},
			defaults: map[string]any{"thinking_mode": "medium"}},
		"precommit": {required: []string{"path"}, optional: []string{"original_request"},
			enums:    map[string]string{"review_type": "full|security|performance|quick"},
			defaults: map[string]any{"include_staged": true, "include_unstaged": true, "review_type": "full", "thinking_mode": "medium"}},
	}
	for name, w := range seed {
		sc := specByName(name).schema()
		if strings.Join(sc.Required, ",") != strings.Join(w.required, ",") {
			t.Errorf("%s: required %v, want %v", name, sc.Required, w.required)
		}
		for _, o := range w.optional {
			if sc.Properties[o] == nil {
				t.Errorf("%s: no %s", name, o)
			}
		}
		for arg, values := range w.enums {
			var got []string
			for _, e := range sc.Properties[arg].Enum {
				got = append(got, e.(string))
			}
			if strings.Join(got, "|") != values {
				t.Errorf("%s.%s: enum %v, want %s", name, arg, got, values)
			}
		}
		for arg, def := range w.defaults {
			want, _ := json.Marshal(def)
			if got := sc.Properties[arg].Default; string(got) != string(want) {
				t.Errorf("%s.%s: default %s, want %s", name, arg, got, want)
			}
		}
	}
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
	wantPrompt := "## Question\nHow does it start?\n\n## Analysis type\ngeneral\n\n## Files\n--- main.go ---\n     1\tcontent of main.go\n--- README.md ---\n     1\tcontent of README.md"
	if turn.Prompt != wantPrompt {
		t.Errorf("prompt:\n%q\nwant:\n%q", turn.Prompt, wantPrompt)
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
			reply := backend.Turn{Prompt: "Which issue first?"}
			if err := h.conv.Continue(context.Background(), conversation.Who{}, &reply, id); err != nil {
				t.Fatal(err)
			}
			if _, _, err := h.conv.Answer(context.Background(), conversation.Call{}, reply, reply.Prompt); err != nil || h.backend.last().Session != id {
				t.Fatalf("the reply ran in %q: %v", h.backend.last().Session, err)
			}
			rec, _, _ := h.store.Get(context.Background(), id)
			if rec.Turns != 3 {
				t.Errorf("turns %d, want 3", rec.Turns)
			}
		})
	}
}

func TestValidationErrorsOnTheWire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		fields []string // in data.validation_errors
	}{
		{"analyze", map[string]any{"files": []string{"a.go"}}, []string{"question"}},
		{"analyze", map[string]any{}, []string{"files", "question"}},
		{"analyze", map[string]any{"files": "a.go", "question": "q", "analysis_type": "deep"}, []string{"files", "analysis_type"}},
		{"codereview", map[string]any{"files": []string{"a.go"}, "context": "c", "severity": "high"}, []string{"severity"}},
		{"debug", map[string]any{"error_description": " "}, []string{"error_description"}},
		{"thinkdeep", map[string]any{"current_analysis": "x", "thinking_mode": "huge", "temperature": 3}, []string{"thinking_mode", "temperature"}},
		{"precommit", map[string]any{"path": ".", "include_staged": "yes"}, []string{"include_staged"}},
		{"precommit", map[string]any{"path": ".", "include_staged": false, "include_unstaged": false}, []string{"include_staged"}},
		{"analyze", map[string]any{"files": []string{"a.go"}, "question": "q", "continuation_id": "not-an-id"}, []string{"continuation_id"}},
		{"analyze", map[string]any{"files": []string{"a.go"}, "question": "q", "continuation_id": session.NewUUID()}, []string{"continuation_id"}},
		// Blank is not absent: it starts no new thread.
		{"analyze", map[string]any{"files": []string{"a.go"}, "question": "q", "continuation_id": " "}, []string{"continuation_id"}},
		{"thinkdeep", map[string]any{"current_analysis": "x", "continuation_id": "\u00a0"}, []string{"continuation_id"}},
		{"debug", map[string]any{"error_description": "x", "continuation_id": "\n\t"}, []string{"continuation_id"}},
	} {
		_, err := h.call(t, tc.tool, tc.args)
		we := wireErr(t, err)
		if we.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(we.Message, "Invalid params: ") {
			t.Errorf("%s %v: code %d message %q", tc.tool, tc.args, we.Code, we.Message)
		}
		var data struct {
			Errors []conversation.FieldError `json:"validation_errors"`
		}
		if err := json.Unmarshal(we.Data, &data); err != nil {
			t.Fatalf("data %s: %v", we.Data, err)
		}
		var fields []string
		for _, e := range data.Errors {
			fields = append(fields, e.Field)
			if e.Error == "" {
				t.Errorf("%s: field %s without a message", tc.tool, e.Field)
			}
		}
		if strings.Join(fields, ",") != strings.Join(tc.fields, ",") {
			t.Errorf("%s %v: fields %v, want %v (%s)", tc.tool, tc.args, fields, tc.fields, we.Data)
		}
	}
	if n := h.backend.count(); n != 0 {
		t.Fatalf("%d turns ran on invalid calls", n)
	}
}

func TestSecurityErrorOnTheWire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	_, err := h.call(t, "analyze", map[string]any{"files": []string{"a.go", "/etc/passwd"}, "question": "q"})
	we := wireErr(t, err)
	if we.Code != -32001 || !strings.Contains(we.Message, "/etc/passwd") || !strings.Contains(we.Message, "inside the project root") {
		t.Fatalf("code %d message %q", we.Code, we.Message)
	}
	if !strings.Contains(string(we.Data), `"field":"files"`) {
		t.Errorf("data %s", we.Data)
	}
	if h.backend.count() != 0 {
		t.Fatal("the turn ran")
	}
}

func TestToolFailureOnTheWire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	h.backend.err = &backend.Error{Kind: backend.KindAPI, Reason: "the Gemini API refused the key: check GEMINI_API_KEY"}
	_, err := h.call(t, "debug", map[string]any{"error_description": "it crashes"})
	we := wireErr(t, err)
	if we.Code != jsonrpc.CodeInternalError || we.Message != "Tool failure: the Gemini API refused the key: check GEMINI_API_KEY" {
		t.Fatalf("code %d message %q", we.Code, we.Message)
	}
}

func TestSystemErrorWithoutFileContext(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", func(d *Deps) { d.Files = nil })
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"analyze", map[string]any{"files": []string{"a.go"}, "question": "q"}},
		{"precommit", map[string]any{"path": "."}},
	} {
		_, err := h.call(t, tc.tool, tc.args)
		we := wireErr(t, err)
		if we.Code != -32000 || !strings.Contains(we.Message, "ask its operator") {
			t.Errorf("%s: code %d message %q", tc.tool, we.Code, we.Message)
		}
	}
	// Without files, no file context is needed.
	h.mustCall(t, "debug", map[string]any{"error_description": "it crashes"})
}

// downStore is a session store that is down.
type downStore struct{ session.Store }

func (downStore) Get(context.Context, string) (session.Record, bool, error) {
	return session.Record{}, false, fmt.Errorf("redis: connection refused: %w", session.ErrUnavailable)
}

func TestSystemErrorWhenStoreDown(t *testing.T) {
	t.Parallel()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	h := newHarnessOn(t, "api", downStore{store}, nil, nil)
	_, err := h.call(t, "analyze", map[string]any{"files": []string{"a.go"}, "question": "q", "continuation_id": session.NewUUID()})
	we := wireErr(t, err)
	if we.Code != -32000 || !strings.Contains(we.Message, "can be retried") {
		t.Fatalf("code %d message %q", we.Code, we.Message)
	}
	if h.backend.count() != 0 {
		t.Fatal("the turn ran")
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
	want := "## Review type\nfull\n\n## Original request\nAdd x\n\n## Repository\nrepo (staged changes: yes, unstaged changes: no)\n\n## Changes\ndiff --git a/x.go b/x.go\n+secret"
	if p := h.backend.last().Prompt; p != want {
		t.Errorf("prompt:\n%q\nwant:\n%q", p, want)
	}
	if !strings.Contains(text, "## Files Processed\n- x.go") {
		t.Errorf("text:\n%s", text)
	}
}

func TestPromptsListed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	res, err := h.client.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Prompt{}
	for _, p := range res.Prompts {
		byName[p.Name] = p
	}
	for _, tool := range all {
		name := tool.name
		p := byName[name]
		if p == nil {
			t.Fatalf("no prompt %s", name)
		}
		var req []string
		for _, a := range p.Arguments {
			if a.Required {
				req = append(req, a.Name)
			}
		}
		if strings.Join(req, ",") != strings.Join(specByName(name).schema().Required, ",") {
			t.Errorf("%s: required arguments %v", name, req)
		}
	}
	got, err := h.client.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "analyze",
		Arguments: map[string]string{"files": "main.go, internal/", "question": "What is it?", "analysis_type": "architecture"}})
	if err != nil {
		t.Fatal(err)
	}
	text := got.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"Call the analyze tool", `"main.go",`, `"internal/"`, `"analysis_type": "architecture"`} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt text lacks %s:\n%s", want, text)
		}
	}
	_, err = h.client.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "analyze", Arguments: map[string]string{"files": "a.go"}})
	if we := wireErr(t, err); we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(string(we.Data), `"question"`) {
		t.Errorf("missing question: %d %s", we.Code, we.Data)
	}
}

// blockingTurns is a session handling whose turns run until their
// context ends, as a Gemini that never answers.
type blockingTurns struct{}

func (blockingTurns) CallOf(context.Context, *mcp.CallToolRequest) conversation.Call {
	return conversation.Call{}
}
func (blockingTurns) Continue(context.Context, conversation.Who, *backend.Turn, string) error {
	return nil
}
func (blockingTurns) ResolveDir(string) (string, error) { return "/project", nil }
func (blockingTurns) Answer(ctx context.Context, _ conversation.Call, _ backend.Turn, _ string) (*backend.Answer, string, error) {
	<-ctx.Done()
	return nil, "", &backend.Error{Kind: backend.KindTimeout, Reason: "Gemini did not answer in time", Err: ctx.Err()}
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d := &Deps{Turns: blockingTurns{}, CallTimeout: 300 * time.Second}
		addAll(mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), d)
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "debug", Arguments: json.RawMessage(`{"error_description":"x"}`)}}
		start := time.Now()
		_, err := d.handler(specByName("debug"))(context.Background(), req)
		if elapsed := time.Since(start); elapsed != 300*time.Second {
			t.Errorf("stopped after %v", elapsed)
		}
		we := wireErr(t, err)
		if we.Code != jsonrpc.CodeInternalError || !strings.Contains(we.Message, "limit of 5m0s per call") {
			t.Fatalf("code %d message %q", we.Code, we.Message)
		}
	})
}

// fullStore records no turn: its disk is full.
type fullStore struct{ session.Store }

func (fullStore) Touch(context.Context, string, session.Turn, time.Time) (session.Record, error) {
	return session.Record{}, fmt.Errorf("disk full: %w", session.ErrUnavailable)
}

// TestAnswerKeptWhenSessionUnsaved: an answer Gemini gave is returned
// even when the store could not record the turn, with a note saying so.
func TestAnswerKeptWhenSessionUnsaved(t *testing.T) {
	t.Parallel()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	h := newHarnessOn(t, "api", fullStore{store}, nil, nil)
	res, err := h.call(t, "debug", map[string]any{"error_description": "it crashes"})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	if len(res.Content) != 2 || !strings.Contains(res.Content[1].(*mcp.TextContent).Text, "could not be saved") || res.Meta["sessionSaved"] != false {
		t.Fatalf("content %d items, meta %v", len(res.Content), res.Meta)
	}
	if !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "answer 1\n\n## Metadata") {
		t.Errorf("answer %q", res.Content[0].(*mcp.TextContent).Text)
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
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "thinkdeep", Arguments: json.RawMessage(args)},
			Extra: &mcp.RequestExtra{Header: http.Header{conversation.ClientHeader: {token}}}}
		return d.handler(specByName("thinkdeep"))(context.Background(), req)
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

// TestInputStructsMatchSchemas: each tool's input struct has a field for
// each property of its schema and no other, so that every argument the
// schema admits reaches the handler; a number has a range, which the
// schema check reads.
func TestInputStructsMatchSchemas(t *testing.T) {
	t.Parallel()
	for _, tool := range all {
		sc := tool.schema()
		var fields []string
		var walk func(reflect.Type)
		walk = func(rt reflect.Type) {
			for f := range rt.Fields() {
				if f.Anonymous {
					walk(f.Type)
					continue
				}
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				fields = append(fields, name)
			}
		}
		walk(reflect.TypeOf(tool.input()).Elem())
		if got, want := slices.Sorted(slices.Values(fields)), slices.Sorted(slices.Values(sc.PropertyOrder)); !slices.Equal(got, want) {
			t.Errorf("%s: the input struct has %v, the schema %v", tool.name, got, want)
		}
		for name, p := range sc.Properties {
			if p.Type == "number" && (p.Minimum == nil || p.Maximum == nil) {
				t.Errorf("%s.%s: a number without a range", tool.name, name)
			}
		}
	}
}
