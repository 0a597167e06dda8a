package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/render"
)

const (
	callTimeout = 2 * time.Minute
	// slowTimeout covers an HTTP 500, which the CLI tries 10 times over 3.5
	// to 4 minutes (2 times with -short); serverTimeout, the server's --timeout, is longer still so
	// that the retries' jitter cannot turn the API error into a timeout.
	slowTimeout   = 7 * time.Minute
	serverTimeout = "8m"
	model         = "gemini-e2e-model"
	modelD        = "gemini-e2e-model-d" // the model scenario's
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestE2E shares one server process between every scenario; the scenarios
// run in parallel, and the checks that need them all finished come after.
// backends are the server's backends: the Gemini CLI one process per
// call, the CLI's warm pool, and the Gemini API itself (reaching the same
// fake API through GOOGLE_GEMINI_BASE_URL). Every scenario runs through
// each, and TestE2EBackendsAgree compares their results.
var backends = []string{"oneshot", "warm", "api"}

func TestE2E(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testBackend(t, backend)
		})
	}
}

func testBackend(t *testing.T, backend string) {
	h := start(t, backend)
	t.Run("calls", func(t *testing.T) {
		t.Run("status_500", h.testStatus500) // the long ones first
		t.Run("status_429_exhausted", h.testStatus429Exhausted)
		t.Run("status_429_retried", h.testStatus429Retried)
		t.Run("cancel_mid_stream", h.testCancelMidStream)
		t.Run("tuning", h.testTuning)
		t.Run("chat_then_reply", h.testChatThenReply)
		t.Run("system_prompt", h.testSystemPrompt)
		t.Run("model", h.testModel)
		t.Run("dash_prompt", h.testDashPrompt)
		t.Run("big_prompt", h.testBigPrompt)
		t.Run("status_400", h.testStatus400)
		t.Run("reply_latest_of_cli", h.testReplyLatestOfCLI)
	})
	if backend != "warm" {
		// One-shot calls leave nothing running between calls, and the API
		// backend starts nothing at all. The warm backend keeps its
		// processes (and their system prompt files) until the server
		// exits, so it is checked after the exit.
		t.Run("nothing_left_behind", func(t *testing.T) {
			h.checkTmpDir(t)
			h.checkNoCLIProcesses(t)
		})
	}
	if backend == "api" {
		t.Run("no_gemini_run", h.checkNoInvocations)
	}
	h.shutdown(t)
	t.Run("no_temp_leftovers_after_exit", h.checkTmpDir)
	t.Run("no_processes_after_exit", func(t *testing.T) {
		if _, err := os.Stat("/proc/self/environ"); err != nil {
			t.Skip("needs /proc")
		}
		if left := h.cliProcesses(t); len(left) > 0 {
			t.Fatalf("still running after the server exited: %v", left)
		}
	})
}

// text returns the text content of res: one item, or two on success,
// the second naming the session (--session-id-in-text, the default).
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	id, _ := res.Meta["sessionId"].(string)
	if n := len(res.Content); n == 2 && id != "" && !res.IsError {
		if tc, ok := res.Content[1].(*mcp.TextContent); !ok || tc.Text != render.SessionNote(id) {
			t.Fatalf("the second content item does not name session %s: %s", id, dump(res))
		}
	} else if n != 1 {
		t.Fatalf("got %d content items, want 1, or 2 with the session's: %s", n, dump(res))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text: %s", res.Content[0], dump(res))
	}
	return tc.Text
}

// success checks that res is a successful answer and returns its text and
// session id.
func success(t *testing.T, res *mcp.CallToolResult) (answer, sessionID string) {
	t.Helper()
	answer = text(t, res)
	if res.IsError {
		t.Fatalf("isError; text:\n%s", answer)
	}
	id, _ := res.Meta["sessionId"].(string)
	if !uuidRE.MatchString(id) {
		t.Errorf("_meta.sessionId = %#v, want a UUID; _meta = %v", res.Meta["sessionId"], res.Meta)
	}
	return answer, id
}

// failure checks that res is an error result for an API failure with
// HTTP status code. A CLI backend's error ends with the tail of the CLI's
// stderr; the API backend runs no process, so its error has none.
func (h *harness) failure(t *testing.T, res *mcp.CallToolResult, code int) {
	t.Helper()
	msg := text(t, res)
	if !res.IsError {
		t.Fatalf("isError is false; text:\n%s", msg)
	}
	if !strings.HasPrefix(msg, "Error executing gemini: ") {
		t.Errorf("text does not start with %q:\n%s", "Error executing gemini: ", msg)
	}
	reason, stderr, ok := strings.Cut(msg, "\nStderr: ")
	if !ok && h.backend != "api" {
		t.Errorf("text has no %q part:\n%s", "\nStderr: ", msg)
	}
	if ok && h.backend == "api" {
		t.Errorf("the API backend's error has a %q part, yet it runs no process:\n%s", "\nStderr: ", msg)
	}
	if !strings.Contains(reason, strconv.Itoa(code)) || !strings.Contains(reason, fakeapi.ErrorMessage(code)) {
		t.Errorf("reason does not mention %d and %q:\n%s", code, fakeapi.ErrorMessage(code), reason)
	}
	if ok && strings.TrimSpace(stderr) == "" {
		t.Errorf("empty stderr tail:\n%s", msg)
	}
	t.Logf("error text (%d bytes) begins: %s", len(msg), clip(msg, 400))
}

// streams returns the answer requests whose prompt contains marker.
func (h *harness) streams(marker string) []fakeapi.Request {
	var out []fakeapi.Request
	for _, r := range h.api.Requests() {
		if r.Method == fakeapi.MethodStream && strings.Contains(r.LastUserText, marker) {
			out = append(out, r)
		}
	}
	return out
}

// stream returns the one answer request whose prompt contains marker.
func (h *harness) stream(t *testing.T, marker string) fakeapi.Request {
	t.Helper()
	rs := h.streams(marker)
	if len(rs) != 1 {
		t.Fatalf("fake API saw %d answer requests with %q, want 1", len(rs), marker)
	}
	return rs[0]
}

// Scenarios a and b: chat in a fresh directory, then chat-reply to its
// session without cwd.
func (h *harness) testChatThenReply(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	prompt := "e2e:chat-first hello there"
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": prompt, "model": model, "cwd": work})
	answer, id := success(t, res)
	// The CLI always sends a system prompt of its own; the API backend
	// sends none unless asked.
	system := "system=yes"
	if h.backend == "api" {
		system = "system=no"
	}
	for _, want := range []string{"fake-api answer", "model=" + model, "contents=1", system, prompt} {
		if !strings.Contains(answer, want) {
			t.Errorf("answer %q does not contain %q", answer, want)
		}
	}
	first := h.stream(t, "e2e:chat-first")
	if first.Model != model || first.NumContents != 1 {
		t.Errorf("first request: model %q, %d contents; want %q, 1", first.Model, first.NumContents, model)
	}
	if h.backend != "api" {
		// The CLI describes its working directory to the model (the API
		// backend has no workspace to describe), and keeps the session in
		// its own files.
		real, _ := filepath.EvalSymlinks(work) // macOS: /var is /private/var
		if !bytes.Contains(first.Body, []byte(work)) && (real == "" || !bytes.Contains(first.Body, []byte(real))) {
			t.Errorf("the CLI did not run in cwd %s: the request does not mention it", work)
		}
		if id != "" {
			h.checkSessionFile(t, id)
		}
	}

	replyPrompt := "e2e:chat-reply again"
	res = h.call(t, callTimeout, "chat-reply", map[string]any{"prompt": replyPrompt, "sessionId": id})
	answer, replyID := success(t, res)
	if replyID != id {
		t.Errorf("chat-reply _meta.sessionId = %q, want %q", replyID, id)
	}
	if !strings.Contains(answer, "last="+replyPrompt) {
		t.Errorf("reply answer %q does not contain the prompt %q", answer, replyPrompt)
	}
	reply := h.stream(t, "e2e:chat-reply")
	if reply.NumContents <= first.NumContents {
		t.Errorf("the resumed turn sent %d contents, the first %d: the history did not come along", reply.NumContents, first.NumContents)
	}
	if h.backend == "api" {
		// Exactly the conversation: the first prompt, its answer, the new
		// prompt, and no system instruction nobody asked for.
		if reply.NumContents != 3 || reply.SystemInstruction != "" || !bytes.Contains(reply.Body, []byte(prompt)) ||
			!bytes.Contains(reply.Body, []byte(fakeapi.Answer(model, 1, "", prompt))) {
			t.Errorf("the API backend's second turn sent %d contents, system instruction %q: %s", reply.NumContents, reply.SystemInstruction, clip(string(reply.Body), 2000))
		}
	}
}

// checkSessionFile checks that the CLI's own session files hold id.
func (h *harness) checkSessionFile(t *testing.T, id string) {
	t.Helper()
	pattern := filepath.Join(h.home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl")
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(id)) {
			return
		}
	}
	t.Errorf("no session file %s holds session %s (found %v)", pattern, id, files)
}

// Scenario c: systemPrompt becomes the request's systemInstruction.
func (h *harness) testSystemPrompt(t *testing.T) {
	t.Parallel()
	marker := "E2E-SYSTEM-MARKER-5f0c1e: answer like a pirate."
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": "e2e:system check", "model": model, "systemPrompt": marker})
	answer, _ := success(t, res)
	if !strings.Contains(answer, "system=yes") {
		t.Errorf("answer %q", answer)
	}
	r := h.stream(t, "e2e:system check")
	if !strings.Contains(r.SystemInstruction, marker) {
		t.Errorf("systemInstruction does not contain the system prompt %q; it begins %q", marker, clip(r.SystemInstruction, 300))
	}
}

// Scenario d: model reaches the URL path.
func (h *harness) testModel(t *testing.T) {
	t.Parallel()
	m := modelD
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": "e2e:model check", "model": m})
	answer, _ := success(t, res)
	if !strings.Contains(answer, "model="+m+" ") {
		t.Errorf("answer %q does not name model %q", answer, m)
	}
	if r := h.stream(t, "e2e:model check"); r.Model != m {
		t.Errorf("request went to model %q, want %q", r.Model, m)
	}
}

// Scenario e: a prompt that looks like flags is a prompt.
func (h *harness) testDashPrompt(t *testing.T) {
	t.Parallel()
	prompt := "-h --version please answer e2e:dash"
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": prompt, "model": model})
	answer, _ := success(t, res)
	if !strings.Contains(answer, "last="+prompt) {
		t.Errorf("answer %q does not contain the prompt %q", answer, prompt)
	}
	if r := h.stream(t, "e2e:dash"); r.LastUserText != prompt {
		t.Errorf("the API saw prompt %q, want %q", r.LastUserText, prompt)
	}
}

// Scenario f: a 300 KB prompt, larger than one argv string may be.
func (h *harness) testBigPrompt(t *testing.T) {
	t.Parallel()
	prompt := bigPrompt(300 << 10)
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": prompt, "model": model})
	answer, _ := success(t, res)
	if !strings.Contains(answer, "last=e2e:big-prompt begins") {
		t.Errorf("answer %q", answer)
	}
	r := h.stream(t, "e2e:big-prompt begins")
	got, want := strings.TrimSpace(r.LastUserText), strings.TrimSpace(prompt)
	if got != want {
		t.Errorf("the API saw a %d-byte prompt ending %q; want the %d-byte prompt ending %q",
			len(got), clip(got[max(0, len(got)-60):], 60), len(want), want[len(want)-60:])
	}
}

// bigPrompt returns about n bytes of numbered, varied sentences: the CLI's
// loop detector blanks answers to text that repeats itself.
func bigPrompt(n int) string {
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike " +
		"november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu " +
		"amber basalt cobalt dune ember fjord glacier harbor islet jasper karst lagoon mesa nebula")
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("e2e:big-prompt begins. Read these sentences.\n")
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Sentence %d:", i)
		for range 8 + rng.IntN(8) {
			b.WriteString(" " + words[rng.IntN(len(words))])
		}
		fmt.Fprintf(&b, " %d.\n", rng.IntN(1_000_000))
	}
	b.WriteString("e2e:big-prompt ends.")
	return b.String()
}

// Scenario g: an HTTP 400 from the API is a tool error naming it.
func (h *harness) testStatus400(t *testing.T) {
	t.Parallel()
	res := h.call(t, callTimeout, "chat", map[string]any{"prompt": "e2e:status-400 [[status:400]]", "model": model})
	h.failure(t, res, 400)
	if rs := h.streams("e2e:status-400"); len(rs) != 1 || rs[0].Status != 400 {
		t.Errorf("fake API answered %d requests for the 400 case, want 1 with status 400", len(rs))
	}
}

// Scenario h: an HTTP 500, which the CLI retries for minutes, is a tool
// error naming it.
func (h *harness) testStatus500(t *testing.T) {
	t.Parallel()
	res := h.call(t, slowTimeout, "chat", map[string]any{"prompt": "e2e:status-500 [[status:500]]", "model": model})
	h.failure(t, res, 500)
	rs := h.streams("e2e:status-500")
	if len(rs) < 2 {
		t.Errorf("fake API saw %d requests for the 500 case; the CLI should have retried", len(rs))
	}
	var gaps []string
	for i := 1; i < len(rs); i++ {
		gaps = append(gaps, rs[i].Time.Sub(rs[i-1].Time).Round(100*time.Millisecond).String())
	}
	t.Logf("the backend tried %d times; gaps %v", len(rs), gaps)
}

// Scenario j: chat-reply without sessionId in a directory where only the
// CLI has run continues the CLI's latest session there.
//
// On the API backend the CLI's session is not the server's to continue:
// with no session of its own in the directory, chat-reply says so, and
// asks the API nothing.
func (h *harness) testReplyLatestOfCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.gemini, "-m", model, "-o", "json", "--prompt=e2e:cli-only first")
	cmd.Env, cmd.Dir = h.cliEnv, dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("running the CLI directly: %v\nstderr: %s", err, stderr.String())
	}
	var out struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.SessionID == "" {
		t.Fatalf("CLI output %q: %v", stdout.String(), err)
	}

	res := h.call(t, callTimeout, "chat-reply", map[string]any{"prompt": "e2e:latest reply", "cwd": dir, "model": model})
	if h.backend == "api" {
		msg := text(t, res)
		if !res.IsError || !strings.Contains(msg, "there is no session to continue yet: start one with chat") {
			t.Errorf("chat-reply on the API backend in the CLI's directory: %s", dump(res))
		}
		if rs := h.streams("e2e:latest reply"); len(rs) != 0 {
			t.Errorf("the API backend sent the refused turn to the API: %d requests", len(rs))
		}
		return
	}
	answer, id := success(t, res)
	if id != out.SessionID {
		t.Errorf("chat-reply continued session %q, want the CLI's %q", id, out.SessionID)
	}
	if !strings.Contains(answer, "last=e2e:latest reply") {
		t.Errorf("answer %q", answer)
	}
	if r := h.stream(t, "e2e:latest reply"); r.NumContents <= 1 {
		t.Errorf("the resumed turn sent %d contents: the history did not come along", r.NumContents)
	}
}

// Scenario i: nothing of the server's is left in TMPDIR.
func (h *harness) checkTmpDir(t *testing.T) {
	entries, err := os.ReadDir(h.tmpDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if strings.HasPrefix(e.Name(), "gemini-mcp-") {
			t.Errorf("left in TMPDIR: %s", e.Name())
		}
	}
	t.Logf("TMPDIR holds %q", names)
}

// checkNoCLIProcesses checks, on Linux, that no process but the server
// itself still runs with this harness's HOME: every CLI the server started
// has been waited for, its re-spawned child included.
func (h *harness) checkNoCLIProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	self := h.cmd.Process.Pid
	if procs, _ := homeProcesses(h.home, 0); procs[self] == "" {
		t.Fatalf("cannot read the server's environment in /proc/%d/environ: the check would see nothing", self)
	}
	procs, _ := homeProcesses(h.home, self)
	for pid, cmdline := range procs {
		t.Errorf("process %d still runs with the test's HOME: %s", pid, cmdline)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
