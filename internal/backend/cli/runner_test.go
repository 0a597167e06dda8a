package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

var fakeGemini string

func TestMain(m *testing.M) { os.Exit(geminitest.RunWithFake(m, &fakeGemini)) }

func newTestRunner(t *testing.T, opts geminicli.Options, extraEnv ...string) (*Runner, string) {
	t.Helper()
	env, log := geminitest.TestFakeEnv(t, extraEnv...)
	opts.Gemini = fakeGemini
	opts.Env = append(env, opts.Env...)
	return NewRunner(opts, nil), log
}

func TestRunNewSession(t *testing.T) {
	t.Parallel()
	r, log := newTestRunner(t, geminicli.Options{})
	dir := geminitest.WorkDir(t)
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "-h mcp", Model: "gemini-x", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if want := geminitest.Answer(1, "gemini-x", "", "-h mcp"); res.Text != want {
		t.Fatalf("response %q, want %q", res.Text, want)
	}
	inv := geminitest.Invocations(t, log)
	if len(inv) != 1 {
		t.Fatalf("%d invocations", len(inv))
	}
	got := inv[0]
	if got.Cwd != dir || got.StdinKind != geminitest.StdinPipe || got.StdinBytes != len("-h mcp") || got.Prompt != "-h mcp" {
		t.Fatalf("invocation %+v", got)
	}
	want := []string{"-m", "gemini-x", "--session-id", res.SessionID, "--output-format", "json"}
	if strings.Join(got.Argv, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("argv %q, want %q", got.Argv, want)
	}
	if !session.IsUUID(res.SessionID) || res.Via != "json" {
		t.Fatalf("session %q via %q", res.SessionID, res.Via)
	}
	// The session exists where the CLI keeps it, and can be resumed.
	res2, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "again", Dir: dir, Session: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if res2.SessionID != res.SessionID || !strings.HasPrefix(res2.Text, "fake-gemini turn=2 ") {
		t.Fatalf("resume: %+v", res2)
	}
}

func TestRunLargePromptOnStdin(t *testing.T) {
	t.Parallel()
	r, log := newTestRunner(t, geminicli.Options{})
	var b strings.Builder
	for i := 0; b.Len() < 300<<10; i++ {
		b.WriteString("line ")
		b.WriteString(strings.Repeat(string(rune('a'+i%26)), i%7+1))
		b.WriteString(" — varied text\n")
	}
	prompt := "-" + b.String()
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: prompt, Dir: geminitest.WorkDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if want := geminitest.Answer(1, geminitest.DefaultModel, "", prompt); res.Text != want {
		t.Fatalf("response %q, want %q", res.Text, want)
	}
	inv := geminitest.Invocations(t, log)[0]
	if inv.StdinKind != geminitest.StdinPipe || inv.StdinBytes != len(prompt) {
		t.Fatalf("stdin %s %d bytes", inv.StdinKind, inv.StdinBytes)
	}
	for _, a := range inv.Argv {
		if strings.HasPrefix(a, "--prompt") || strings.HasPrefix(a, "-p") {
			t.Fatalf("prompt also in argv: %q", a)
		}
	}
}

// TestRunPromptNeverInArgv: a prompt of any size goes on stdin, never on
// the command line, which every local user can read in
// /proc/PID/cmdline; a resumed session's prompt too.
func TestRunPromptNeverInArgv(t *testing.T) {
	t.Parallel()
	r, log := newTestRunner(t, geminicli.Options{})
	dir := geminitest.WorkDir(t)
	const secret = "the password is hunter2"
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: secret, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "-h " + secret, Dir: dir, Session: res.SessionID}); err != nil {
		t.Fatal(err)
	}
	for i, inv := range geminitest.Invocations(t, log) {
		// The fake records its os.Args, which are /proc/PID/cmdline.
		for _, a := range inv.Argv {
			if strings.Contains(a, "hunter2") || strings.HasPrefix(a, "--prompt") || a == "-p" {
				t.Errorf("invocation %d: the prompt is in argv %q", i, inv.Argv)
			}
		}
		if inv.StdinKind != geminitest.StdinPipe || !strings.Contains(inv.Prompt, secret) {
			t.Errorf("invocation %d: stdin %s, prompt %q", i, inv.StdinKind, inv.Prompt)
		}
	}
}

// TestRunPromptOverStdinCap: a prompt larger than the CLI reads from stdin
// is refused before any process starts, not sent cut.
func TestRunPromptOverStdinCap(t *testing.T) {
	t.Parallel()
	r, log := newTestRunner(t, geminicli.Options{})
	_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: strings.Repeat("x", StdinPromptMax+1), Dir: geminitest.WorkDir(t)})
	var be *backend.Error
	if !errors.As(err, &be) || be.Kind != backend.KindInput || !strings.Contains(be.Reason, "reads at most") {
		t.Fatalf("err %v", err)
	}
	if inv := geminitest.Invocations(t, log); len(inv) != 0 {
		t.Fatalf("%d invocations", len(inv))
	}
}

func TestRunSystemPromptFileIsPrivateAndRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r, log := newTestRunner(t, geminicli.Options{})
	dir := geminitest.WorkDir(t)
	type seen struct {
		dirMode, fileMode os.FileMode
		err               error
	}
	got := make(chan seen, 1)
	go func() {
		// Look at the file while the call runs.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			m, _ := filepath.Glob(filepath.Join(tmp, "gemini-mcp-*", "SYSTEM.md"))
			if len(m) == 1 {
				fi, err1 := os.Stat(m[0])
				di, err2 := os.Stat(filepath.Dir(m[0]))
				if err1 == nil && err2 == nil {
					got <- seen{di.Mode().Perm(), fi.Mode().Perm(), nil}
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		got <- seen{err: errors.New("SYSTEM.md never appeared")}
	}()
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "hi [[sleep:700]]", SystemPrompt: "You are MARK.\nSecond line.", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.err != nil || s.dirMode != 0o700 || s.fileMode != 0o600 {
		t.Fatalf("while running: dir %v file %v err %v", s.dirMode, s.fileMode, s.err)
	}
	if !strings.Contains(res.Text, "system=You are MARK.") {
		t.Fatalf("response %q", res.Text)
	}
	inv := geminitest.Invocations(t, log)[0]
	if inv.SystemMd != "You are MARK.\nSecond line." || inv.Env["GEMINI_SYSTEM_MD"] != inv.SystemMdPath {
		t.Fatalf("invocation %+v", inv)
	}
	assertNoTempDirs(t, tmp)
	// Failure and timeout paths remove it too.
	r.opts.Timeout = 300 * time.Millisecond
	for _, p := range []string{"[[exit:41]]", "[[hang]]"} {
		if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: p, SystemPrompt: "S", Dir: dir}); err == nil {
			t.Fatalf("%s succeeded", p)
		}
		assertNoTempDirs(t, tmp)
	}
}

func assertNoTempDirs(t *testing.T, tmp string) {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(tmp, "gemini-mcp-*")); len(m) > 0 {
		t.Fatalf("left behind: %v", m)
	}
}

func TestRunOlderCLIWithoutSessionIDFlag(t *testing.T) {
	t.Parallel()
	r, log := newTestRunner(t, geminicli.Options{}, geminitest.EnvNoSessionIDFlag+"=1")
	dir := geminitest.WorkDir(t)
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "one", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !session.IsUUID(res.SessionID) || res.Via != "json" {
		t.Fatalf("session %q via %s", res.SessionID, res.Via)
	}
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "two", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	inv := geminitest.Invocations(t, log)
	// One refused try, then two runs without the flag: it is asked once.
	if len(inv) != 3 || !contains(inv[0].Argv, "--session-id") || contains(inv[1].Argv, "--session-id") || contains(inv[2].Argv, "--session-id") {
		for _, i := range inv {
			t.Log(i.Argv)
		}
		t.Fatalf("%d invocations", len(inv))
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

func TestRunSessionIDFallbacks(t *testing.T) {
	t.Parallel()
	r, log := newTestRunner(t, geminicli.Options{})
	dir := geminitest.WorkDir(t)
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "first [[nosession]]", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Via != "preselected" || !session.IsUUID(res.SessionID) {
		t.Fatalf("new: %q via %s", res.SessionID, res.Via)
	}
	res2, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "second [[nosession]]", Dir: dir, Session: res.SessionID})
	if err != nil || res2.SessionID != res.SessionID || res2.Via != "resumed" {
		t.Fatalf("resume by id: %+v %v", res2, err)
	}
	// With "latest" nothing but the CLI's list says which session ran.
	res3, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "third [[nosession]]", Dir: dir, Session: "latest"})
	if err != nil || res3.SessionID != res.SessionID || res3.Via != "list-sessions" {
		t.Fatalf("resume latest: %+v %v", res3, err)
	}
	inv := geminitest.Invocations(t, log)
	if last := inv[len(inv)-1]; !contains(last.Argv, "--list-sessions") {
		t.Fatalf("last invocation %q", last.Argv)
	}
}

func TestRunFailures(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t, geminicli.Options{})
	dir := geminitest.WorkDir(t)
	cases := []struct {
		prompt, resume string
		kind           backend.Kind
		want           []string
	}{
		{"[[exit:41]]", "", backend.KindAuth, []string{"exit 41", "GEMINI_API_KEY"}},
		{"x", "b9aadb6c-5aca-4c65-b929-02b095cc2b94", backend.KindSession, []string{"b9aadb6c-5aca-4c65-b929-02b095cc2b94", dir, "Invalid session identifier"}},
		{"[[exit:53]]", "", backend.KindTurnLimit, []string{"turn limit"}},
		{"[[exit:55]]", "", backend.KindUntrusted, []string{"--skip-trust"}},
		{"[[exit:144]]", "", backend.KindAPI, []string{"400", "fake api error 400"}},
		{"[[exit:173]]", "", backend.KindAPI, []string{"429", "quota"}},
		{"[[exit:1]]", "", backend.KindFailed, []string{"exited with code 1", "fake failure with exit 1"}},
		{"[[badjson]]", "", backend.KindBadOutput, []string{"this is not json"}},
		{"[[empty]]", "", backend.KindEmpty, []string{"empty answer"}},
	}
	for _, c := range cases {
		t.Run(c.prompt, func(t *testing.T) {
			_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: c.prompt, Dir: dir, Session: c.resume})
			var e *backend.Error
			if !errors.As(err, &e) || e.Kind != c.kind || !e.Ran {
				t.Fatalf("got %v (%T)", err, err)
			}
			for _, w := range c.want {
				if !strings.Contains(e.Reason+e.Stderr, w) {
					t.Errorf("%q lacks %q", e.Reason, w)
				}
			}
			if len(e.Stderr) > stderrShow {
				t.Errorf("stderr tail of %d bytes", len(e.Stderr))
			}
		})
	}
}

func TestRunStderrTailIsBounded(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t, geminicli.Options{})
	_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "[[stderr:500000]] [[exit:1]]", Dir: geminitest.WorkDir(t)})
	var e *backend.Error
	if !errors.As(err, &e) || len(e.Stderr) > stderrShow || !strings.Contains(e.Reason, "fake failure") {
		t.Fatalf("got %v, stderr %d bytes", err, len(e.Stderr))
	}
}

func TestRunOutputCap(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t, geminicli.Options{MaxOutputBytes: 64 << 10})
	_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "[[stdout:1000000]]", Dir: geminitest.WorkDir(t)})
	var e *backend.Error
	if !errors.As(err, &e) || e.Kind != backend.KindOutputTooBig {
		t.Fatalf("got %v", err)
	}
}

func TestRunNotFound(t *testing.T) {
	t.Parallel()
	r := NewRunner(geminicli.Options{Gemini: filepath.Join(t.TempDir(), "gemini")}, nil)
	_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "x", Dir: geminitest.WorkDir(t)})
	var e *backend.Error
	if !errors.As(err, &e) || e.Kind != backend.KindNotFound || e.Ran {
		t.Fatalf("got %v", err)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t, geminicli.Options{}, geminitest.EnvVersion+"=9.9.9")
	v, err := r.Version(geminitest.Context(t))
	if err != nil || v != "9.9.9" {
		t.Fatalf("got %q %v", v, err)
	}
}

func TestRunSkipsTheRelaunchUnlessTold(t *testing.T) {
	t.Parallel()
	r, log := newTestRunner(t, geminicli.Options{})
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "a", Dir: geminitest.WorkDir(t)}); err != nil {
		t.Fatal(err)
	}
	if got := geminitest.Invocations(t, log)[0].Env["GEMINI_CLI_NO_RELAUNCH"]; got != "true" {
		t.Fatalf("GEMINI_CLI_NO_RELAUNCH = %q, want true by default", got)
	}
	r, log = newTestRunner(t, geminicli.Options{Env: []string{"GEMINI_CLI_NO_RELAUNCH="}})
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "a", Dir: geminitest.WorkDir(t)}); err != nil {
		t.Fatal(err)
	}
	if got, ok := geminitest.Invocations(t, log)[0].Env["GEMINI_CLI_NO_RELAUNCH"]; !ok || got != "" {
		t.Fatalf("the operator's GEMINI_CLI_NO_RELAUNCH was overridden: %q %v", got, ok)
	}
}

func TestRunDefaultModel(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t, geminicli.Options{DefaultModel: "gemini-default"})
	dir := geminitest.WorkDir(t)
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "a", Dir: dir})
	if err != nil || !strings.Contains(res.Text, "model=gemini-default ") {
		t.Fatalf("%v %+v", err, res)
	}
	res, err = r.Run(geminitest.Context(t), backend.Turn{Prompt: "b", Model: "gemini-chosen", Dir: dir})
	if err != nil || !strings.Contains(res.Text, "model=gemini-chosen ") {
		t.Fatalf("the call's model must win: %v %+v", err, res)
	}
}

// TestRunUsageAndNotApplied: the one-shot backend reports the token counts
// of the CLI's stats, and answers a turn asking for tuning the CLI cannot
// apply, naming that tuning.
func TestRunUsageAndNotApplied(t *testing.T) {
	t.Parallel()
	r, _ := newTestRunner(t, geminicli.Options{})
	temp := 0.2
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "a", Dir: geminitest.WorkDir(t), Temperature: &temp, ThinkingMode: "high"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage == nil || *res.Usage != (backend.Usage{PromptTokens: 1, OutputTokens: 1}) {
		t.Errorf("usage %+v, want the fake's 1 prompt and 1 output token", res.Usage)
	}
	if len(res.NotApplied) != 2 || !strings.HasPrefix(res.NotApplied[0], "temperature: ") || !strings.HasPrefix(res.NotApplied[1], "thinking_mode: ") {
		t.Errorf("not applied: %q", res.NotApplied)
	}
	res, err = r.Run(geminitest.Context(t), backend.Turn{Prompt: "b", Dir: geminitest.WorkDir(t)})
	if err != nil || res.NotApplied != nil {
		t.Errorf("untuned turn: %v %q", err, res.NotApplied)
	}
}

// TestChildEnvWithholdsServerSettings: the CLI, whose model may run shell
// tools, does not inherit this server's settings, some of which are
// secrets; its own variables and the additions pass.
func TestChildEnvWithholdsServerSettings(t *testing.T) {
	t.Setenv("GEMINI_MCP_TOKENS", "client-token-0123456789")
	t.Setenv("GEMINI_MCP_AUTH_CLIENT_SECRET", "client-secret-0123456789")
	t.Setenv("gemini_mcp_store", "redis://:pw@h:6379")
	t.Setenv("GEMINI_API_KEY", "key")
	env := strings.Join(geminicli.ChildEnv([]string{"GEMINI_CLI_UNDER_GEMINI_MCP_SERVER=1"}), "\n")
	for _, secret := range []string{"client-token-0123456789", "client-secret-0123456789", "redis://:pw@h"} {
		if strings.Contains(env, secret) {
			t.Errorf("the CLI's environment holds %s", secret)
		}
	}
	for _, want := range []string{"GEMINI_API_KEY=key", "GEMINI_CLI_UNDER_GEMINI_MCP_SERVER=1", "GEMINI_CLI_NO_RELAUNCH=true"} {
		if !strings.Contains(env, want) {
			t.Errorf("the CLI's environment lacks %s", want)
		}
	}
}
