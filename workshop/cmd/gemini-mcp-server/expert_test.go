package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// expertEnv is the server on the fake Gemini API with a project root of
// its own.
type expertEnv struct {
	*hostEnv
	root string
}

func newExpertEnv(t *testing.T) *expertEnv {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &expertEnv{hostEnv: newHostEnv(t, map[string]any{}), root: root}
}

func (e *expertEnv) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(e.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// repo makes e.root/repo a git repository whose one commit holds app.go
// and the other files given (name, content, name, content…), and returns
// its path.
func (e *expertEnv) repo(t *testing.T, files ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := filepath.Join(e.root, "repo")
	e.write(t, "repo/app.go", "package app\n")
	for i := 0; i+1 < len(files); i += 2 {
		e.write(t, "repo/"+files[i], files[i+1])
	}
	git(t, repo, "init", "-q")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "start")
	return repo
}

func (e *expertEnv) stdio(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := e.command(append([]string{"--project-root", e.root}, args...)...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "expert-test", Version: "1"}, nil).
		Connect(guardCtx(t), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// streams are the turns the fake API received.
func (e *expertEnv) streams() []fakeapi.Request {
	var out []fakeapi.Request
	for _, r := range e.api.Requests() {
		if r.Method == fakeapi.MethodStream {
			out = append(out, r)
		}
	}
	return out
}

func callExpert(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	return cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: tool, Arguments: args})
}

func expertOK(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, mcp.Meta) {
	t.Helper()
	res, err := callExpert(t, cs, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("%s failed: %+v", tool, res)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.Meta
}

func wireError(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return we
}

// project writes a source file, a doc and a log, named so that neither
// alphabetical order nor the order given is the priority order.
func (e *expertEnv) project(t *testing.T) {
	e.write(t, "a-notes.log", "started\nstopped\n")
	e.write(t, "README.md", "# Demo\n")
	e.write(t, "src/main.go", "package main\n\nfunc main() {}\n")
}

func TestExpertToolsSendFilesInPriorityOrder(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	e.project(t)
	cs := e.stdio(t)
	files := []string{"a-notes.log", "README.md", "src"}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"thinkdeep", map[string]any{"current_analysis": "a plan", "files": files}},
		{"analyze", map[string]any{"question": "what is it?", "files": files}},
		{"codereview", map[string]any{"context": "a demo", "files": files}},
		{"debug", map[string]any{"error_description": "it stops", "files": files}},
	}
	for _, c := range calls {
		text, meta := expertOK(t, cs, c.tool, c.args)
		reqs := e.streams()
		p := reqs[len(reqs)-1].LastUserText
		i, j, k := strings.Index(p, "BEGIN FILE: src/main.go"), strings.Index(p, "BEGIN FILE: README.md"), strings.Index(p, "BEGIN FILE: a-notes.log")
		if i < 0 || j < i || k < j {
			t.Errorf("%s: the files are not source, docs, log in that order:\n%s", c.tool, p)
		}
		if !strings.Contains(p, "   1│ package main\n   2│ \n   3│ func main() {}") {
			t.Errorf("%s: no line numbers in the prompt:\n%s", c.tool, p)
		}
		if !strings.Contains(text, "## Files Processed\n- src/main.go\n- README.md\n- a-notes.log") || meta["continuationId"] == nil {
			t.Errorf("%s: result:\n%s\n%v", c.tool, text, meta)
		}
	}
}

func TestExpertContinuationAcrossToolsSkipsSentFiles(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	e.project(t)
	cs := e.stdio(t)
	_, meta := expertOK(t, cs, "analyze", map[string]any{"question": "what is it?", "files": []string{"src/main.go"}})
	id := meta["continuationId"].(string)
	text, meta2 := expertOK(t, cs, "codereview", map[string]any{"context": "review it", "files": []string{"src/main.go", "README.md"}, "continuation_id": id})
	if meta2["continuationId"] != id {
		t.Errorf("codereview continued %v, want %s", meta2["continuationId"], id)
	}
	reqs := e.streams()
	second := reqs[len(reqs)-1]
	if second.NumContents < 3 {
		t.Errorf("the second turn carries %d contents: no history", second.NumContents)
	}
	if strings.Contains(second.LastUserText, "BEGIN FILE: src/main.go") || !strings.Contains(second.LastUserText, "BEGIN FILE: README.md") {
		t.Errorf("second prompt:\n%s", second.LastUserText)
	}
	if !strings.Contains(text, "- src/main.go: duplicate") {
		t.Errorf("the result does not say main.go was skipped:\n%s", text)
	}
}

func TestExpertRefusalsChangeNothing(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	e.project(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(e.root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := range 51 {
		name := fmt.Sprintf("many/f%02d.go", i)
		e.write(t, name, "package many\n")
		many = append(many, name)
	}
	e.write(t, "big.go", strings.Repeat("x", 11<<20))
	cs := e.stdio(t)
	for _, c := range []struct {
		name  string
		files []string
		code  int64
	}{
		{"dot-dot", []string{"../" + filepath.Base(outside) + "/secret.txt"}, -32001},
		{"symlink", []string{"link.txt"}, -32001},
		{"etc-passwd", []string{"/etc/passwd"}, -32001},
		{"51 files", many, -32602},
		{"11 MB", []string{"big.go"}, -32602},
	} {
		_, err := callExpert(t, cs, "analyze", map[string]any{"question": "q", "files": c.files})
		we := wireError(t, err)
		if we.Code != c.code {
			t.Errorf("%s: code %d (%s), want %d", c.name, we.Code, we.Message, c.code)
		}
	}
	if n := len(e.api.Requests()); n != 0 {
		t.Errorf("%d requests reached the API", n)
	}
	if entries, err := os.ReadDir(filepath.Join(e.dir, "state")); err == nil {
		for _, en := range entries {
			if strings.HasPrefix(en.Name(), "sessions.db") {
				continue
			}
			t.Errorf("the state directory holds %s", en.Name())
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestExpertPrecommitFindsSecretAndSaysNoGo(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	repo := e.repo(t, "util.go", "package app\n")
	// The key is assembled here so that no scanner flags this file.
	key := "AKIA" + strings.Repeat("Q7", 8)
	e.write(t, "repo/app.go", "package app\n\nconst region = \"eu\"\n")
	git(t, repo, "add", "app.go")
	e.write(t, "repo/util.go", "package app\n\nfunc helper() {}\n")
	e.write(t, "repo/config.go", "package app\n\nconst awsKey = \""+key+"\"\n")
	cs := e.stdio(t)
	text, meta := expertOK(t, cs, "precommit", map[string]any{"path": "repo", "original_request": "add a region"})
	reqs := e.streams()
	p := reqs[len(reqs)-1].LastUserText
	if strings.Contains(p, key) || strings.Contains(text, key) {
		t.Fatalf("the secret itself was sent or shown:\n%s\n%s", p, text)
	}
	for _, want := range []string{"## Staged changes", "const region", "## Unstaged changes", "func helper", "config.go", "aws-access-key-id"} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, p)
		}
	}
	if !strings.Contains(text, "## Secrets Found\n- config.go:3: aws-access-key-id") || !strings.Contains(text, "## Verdict: NO-GO") || meta["verdict"] != "no-go" {
		t.Errorf("result:\n%s\n%v", text, meta)
	}
	for _, f := range []string{"app.go", "util.go", "config.go"} {
		if !strings.Contains(text, "- "+f) {
			t.Errorf("the result does not list %s:\n%s", f, text)
		}
	}
}

func TestExpertPrecommitNotARepository(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	e := newExpertEnv(t)
	e.write(t, "plain/a.go", "package a\n")
	cs := e.stdio(t)
	_, err := callExpert(t, cs, "precommit", map[string]any{"path": "plain"})
	if we := wireError(t, err); we.Code != -32602 || !strings.Contains(string(we.Data), `"path"`) {
		t.Errorf("code %d data %s", we.Code, we.Data)
	}
	_, err = callExpert(t, cs, "precommit", map[string]any{"path": "/etc"})
	if we := wireError(t, err); we.Code != -32001 {
		t.Errorf("/etc: code %d", we.Code)
	}
	if n := len(e.api.Requests()); n != 0 {
		t.Errorf("%d requests reached the API", n)
	}
}

func TestExpertRateLimitOverTheWire(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	e.project(t)
	cs := e.stdio(t, "--rate-limits", "analyze=1/min")
	expertOK(t, cs, "analyze", map[string]any{"question": "q", "files": []string{"README.md"}})
	_, err := callExpert(t, cs, "analyze", map[string]any{"question": "q", "files": []string{"README.md"}})
	we := wireError(t, err)
	var data struct {
		Retry int `json:"retryAfterSeconds"`
	}
	if json.Unmarshal(we.Data, &data); we.Code != -32603 || data.Retry < 1 || data.Retry > 60 {
		t.Errorf("code %d data %s", we.Code, we.Data)
	}
	if n := len(e.streams()); n != 1 {
		t.Errorf("%d turns reached the API, want 1", n)
	}
	// Another tool is not limited.
	expertOK(t, cs, "thinkdeep", map[string]any{"current_analysis": "a plan"})
}

func TestChatFilesAndContinuationID(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	e.project(t)
	cs := e.stdio(t)
	_, meta := expertOK(t, cs, "analyze", map[string]any{"question": "what is it?", "files": []string{"src/main.go"}})
	id := meta["continuationId"].(string)

	// chat-reply takes the expert tool's continuation_id, and skips the
	// file the thread was sent.
	res, err := callExpert(t, cs, "chat-reply", map[string]any{"prompt": "and the docs?", "continuation_id": id, "files": []string{"src", "README.md"}})
	if err != nil || res.IsError {
		t.Fatalf("chat-reply: %v %+v", err, res)
	}
	reqs := e.streams()
	p := reqs[len(reqs)-1]
	if p.NumContents < 3 || strings.Contains(p.LastUserText, "BEGIN FILE: src/main.go") || !strings.HasPrefix(p.LastUserText, "## Files\n--- BEGIN FILE: README.md") || !strings.HasSuffix(p.LastUserText, "\n## Prompt\nand the docs?") {
		t.Errorf("chat-reply's turn (%d contents):\n%s", p.NumContents, p.LastUserText)
	}
	if res.Meta["sessionId"] != id || fmt.Sprint(res.Meta["filesProcessed"]) != "[map[path:README.md]]" ||
		!strings.Contains(fmt.Sprint(res.Meta["filesSkipped"]), "src/main.go") {
		t.Errorf("chat-reply _meta %v", res.Meta)
	}

	// chat given the continuation id continues the thread too.
	res, err = callExpert(t, cs, "chat", map[string]any{"prompt": "one more", "continuation_id": id, "files": []string{"README.md", "a-notes.log"}})
	if err != nil || res.IsError || res.Meta["sessionId"] != id {
		t.Fatalf("chat: %v %+v", err, res)
	}
	reqs = e.streams()
	p = reqs[len(reqs)-1]
	if p.NumContents < 5 || strings.Contains(p.LastUserText, "BEGIN FILE: README.md") || !strings.Contains(p.LastUserText, "   1│ started") {
		t.Errorf("chat's turn (%d contents):\n%s", p.NumContents, p.LastUserText)
	}

	// Refusals keep chat's error shape: a failed result, not a JSON-RPC error.
	before := len(e.api.Requests())
	for _, args := range []map[string]any{
		{"prompt": "x", "files": []string{"/etc/passwd"}},
		{"prompt": "x", "files": []string{"../x"}},
	} {
		res, err := callExpert(t, cs, "chat", args)
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "outside the project root") {
			t.Errorf("chat %v: %v %+v", args, err, res)
		}
	}
	res, err = callExpert(t, cs, "chat-reply", map[string]any{"prompt": "x", "sessionId": id, "continuation_id": "00000000-0000-4000-8000-000000000000"})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "different sessions") {
		t.Errorf("chat-reply with two ids: %v %+v", err, res)
	}
	if n := len(e.api.Requests()); n != before {
		t.Errorf("%d requests reached the API", n-before)
	}
}

// TestExpertToolsOnTheCLIBackend runs analyze then codereview on the
// one-shot CLI backend (the fake gemini CLI): the files reach the CLI's
// prompt with line numbers, the second tool resumes the first's session
// without the file, and _meta says what the CLI could not apply.
func TestExpertToolsOnTheCLIBackend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for rel, content := range map[string]string{"src/main.go": "package main\n", "README.md": "# Demo\n"} {
		p := filepath.Join(e.work, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs := connect(t, e.command("--project-root", e.work))
	_, meta := expertOK(t, cs, "analyze", map[string]any{"question": "what is it?", "files": []string{"README.md", "src"}})
	id, _ := meta["continuationId"].(string)
	if id == "" || !strings.Contains(fmt.Sprint(meta["notApplied"]), "thinking_mode") {
		t.Fatalf("_meta %v", meta)
	}
	_, meta = expertOK(t, cs, "codereview", map[string]any{"context": "review", "files": []string{"src/main.go"}, "continuation_id": id})
	invs, err := geminitest.ReadLog(e.log)
	if err != nil || len(invs) != 2 {
		t.Fatalf("%d invocations: %v", len(invs), err)
	}
	first, second := invs[0].Prompt, invs[1].Prompt
	if i, j := strings.Index(first, "BEGIN FILE: src/main.go"), strings.Index(first, "BEGIN FILE: README.md"); i < 0 || j < i || !strings.Contains(first, "   1│ package main") {
		t.Errorf("first prompt:\n%s", first)
	}
	if strings.Contains(second, "BEGIN FILE") || !slices.Contains(invs[1].Argv, "-r") {
		t.Errorf("second call %v:\n%s", invs[1].Argv, second)
	}
	if meta["continuationId"] != id {
		t.Errorf("continued %v, want %s", meta["continuationId"], id)
	}
	// A named image: the CLI backends send no media, and say which does.
	if err := os.WriteFile(filepath.Join(e.work, "shot.png"), []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = callExpert(t, cs, "analyze", map[string]any{"question": "what is it?", "files": []string{"shot.png"}})
	if we := wireError(t, err); !strings.Contains(we.Message, "image/png") || !strings.Contains(we.Message, "--backend api") {
		t.Errorf("a named image on the CLI backend: %v", we)
	}
	if invs, _ := geminitest.ReadLog(e.log); len(invs) != 2 {
		t.Errorf("%d invocations: the refused call ran the CLI", len(invs))
	}
}

// TestProjectRootOutsideAllowedRootsStopsHTTPServer: over HTTP the project
// root must lie within --allowed-roots, checked at start.
func TestProjectRootOutsideAllowedRootsStopsHTTPServer(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	allowed := t.TempDir()
	cmd := e.command("--http", "127.0.0.1:0", "--allowed-roots", allowed, "--project-root", e.root)
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(e.stderr.String(), "--project-root "+e.root+" cannot be used") {
		t.Fatalf("exit %v, stderr:\n%s", err, e.stderr.String())
	}
}

// TestExpertTokensCountedByTheAPI: on the API backend the file context
// counts tokens with countTokens rather than estimating them. The fake
// counts words, so a file of long words is ~200 tokens to it and ~1,200 by
// the 4-bytes estimate: under a budget of 600 it is sent only if counted.
func TestExpertTokensCountedByTheAPI(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	var b strings.Builder
	for range 100 {
		b.WriteString(strings.Repeat("x", 40) + "\n")
	}
	e.write(t, "long.go", b.String())
	cs := e.stdio(t, "--max-context-tokens", "600")
	text, _ := expertOK(t, cs, "analyze", map[string]any{"question": "what is it?", "files": []string{"long.go"}})
	reqs := e.streams()
	if p := reqs[len(reqs)-1].LastUserText; !strings.Contains(p, "BEGIN FILE: long.go") {
		t.Errorf("the file was not sent:\n%s\n%s", text, p)
	}
	counted := 0
	for _, r := range e.api.Requests() {
		if r.Method == fakeapi.MethodCountTokens {
			counted++
		}
	}
	if counted == 0 {
		t.Error("no countTokens request reached the API")
	}
}

// TestCodereviewContextCache: a codereview over files past the model's
// minimum for a cache puts them in one; its continuation sends only the
// rest of the thread, and both report the cached tokens in _meta.usage; a
// cache that expired between turns costs one refused request, and the
// turn succeeds with a fresh one. With --cache-ttl 0, none.
func TestCodereviewContextCache(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	e.write(t, "src/big.go", "package big\n\n"+strings.Repeat("// a line of the file\n", 400))
	cs := e.stdio(t)
	_, meta := expertOK(t, cs, "codereview", map[string]any{"context": "review it", "files": []string{"src/big.go"}})
	id, _ := meta["continuationId"].(string)
	_, meta2 := expertOK(t, cs, "codereview", map[string]any{"context": "and now the style", "files": []string{"src/big.go"}, "continuation_id": id})
	if n := e.api.CachesCreated(); n != 1 {
		t.Fatalf("%d caches created, want 1", n)
	}
	s := e.streams()
	if len(s) != 2 || s[0].CachedContent == "" || s[1].CachedContent != s[0].CachedContent ||
		strings.Contains(string(s[1].Body), "a line of the file") || !strings.Contains(s[1].SystemInstruction, "code review") {
		t.Fatalf("requests: %d, caches %q", len(s), []string{s[0].CachedContent, s[len(s)-1].CachedContent})
	}
	for _, m := range []mcp.Meta{meta, meta2} {
		u, _ := m["usage"].(map[string]any)
		if c, _ := u["cachedTokens"].(float64); c < 2000 || u["promptTokens"].(float64) <= c {
			t.Errorf("_meta.usage %v", u)
		}
	}

	// The cache expires between two turns: the next one still succeeds,
	// with a fresh cache, after one refused request.
	e.api.ExpireCaches()
	text, meta3 := expertOK(t, cs, "codereview", map[string]any{"context": "once more", "files": []string{"src/big.go"}, "continuation_id": id})
	s = e.streams()
	if n := e.api.CachesCreated(); n != 2 || len(s) != 4 || s[2].Status != 403 || s[3].Status != 200 ||
		s[3].CachedContent == "" || s[3].CachedContent == s[0].CachedContent || !strings.Contains(text, "once more") {
		t.Fatalf("after expiry: %d caches, %d requests", n, len(s))
	}
	if u, _ := meta3["usage"].(map[string]any); u["cachedTokens"] == nil {
		t.Errorf("after expiry: _meta.usage %v", u)
	}

	off := newExpertEnv(t)
	off.write(t, "src/big.go", "package big\n\n"+strings.Repeat("// a line of the file\n", 400))
	_, meta = expertOK(t, off.stdio(t, "--cache-ttl", "0"), "codereview", map[string]any{"context": "review it", "files": []string{"src/big.go"}})
	if u, _ := meta["usage"].(map[string]any); off.api.CachesCreated() != 0 || u["cachedTokens"] != nil {
		t.Errorf("--cache-ttl 0: %d caches, _meta.usage %v", off.api.CachesCreated(), u)
	}
}
