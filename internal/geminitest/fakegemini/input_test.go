package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

func TestPromptAssembly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		stdin      string
		args       []string
		wantPrompt string
	}{
		{"argument only", "", []string{"just the arg"}, "just the arg"},
		{"stdin only", "from stdin\nline 2", nil, "from stdin\nline 2"},
		{"stdin then argument", "context", []string{"-p", "question"}, "context\n\nquestion"},
		{"stdin then positional", "context", []string{"question"}, "context\n\nquestion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			got := s.runWith(strings.NewReader(tt.stdin), tt.args...).mustSucceed(t).answerLine(t)
			if want := geminitest.Answer(1, geminitest.DefaultModel, "", tt.wantPrompt); got != want {
				t.Errorf("answer\n got %s\nwant %s", got, want)
			}
			inv := s.lastInvocation()
			if inv.Prompt != tt.wantPrompt || inv.StdinBytes != len(tt.stdin) || inv.StdinKind != geminitest.StdinPipe {
				t.Errorf("logged prompt %q, stdin %d bytes from %s; want %q, %d bytes from a pipe",
					inv.Prompt, inv.StdinBytes, inv.StdinKind, tt.wantPrompt, len(tt.stdin))
			}
		})
	}
}

func TestStdinKinds(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	s.run("hi").mustSucceed(t)
	if kind := s.lastInvocation().StdinKind; kind != geminitest.StdinDevNull {
		t.Errorf("nil Cmd.Stdin gave stdin kind %q, want %q", kind, geminitest.StdinDevNull)
	}

	path := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(path, []byte("from a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s.runWith(f).mustSucceed(t)
	inv := s.lastInvocation()
	if inv.StdinKind != geminitest.StdinFile || inv.Prompt != "from a file" {
		t.Errorf("file stdin logged as kind %q with prompt %q", inv.StdinKind, inv.Prompt)
	}
}

func TestLargeStdin(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	// Larger than a pipe's buffer and than Linux's 128 KiB limit on one argument.
	prompt := variedText(3<<20, "line %d of a long prompt\n")
	r := s.runWith(strings.NewReader(prompt), "-o", "json").mustSucceed(t)
	if got, want := r.jsonOut(t)["response"], geminitest.Answer(1, geminitest.DefaultModel, "", prompt); got != want {
		t.Errorf("response %v, want %s", got, want)
	}
	if inv := s.lastInvocation(); inv.StdinBytes != len(prompt) {
		t.Errorf("logged %d stdin bytes, want %d", inv.StdinBytes, len(prompt))
	}
}

func TestNoInput(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	const msg = "No input provided via stdin. Input can be provided by piping data into gemini or using the --prompt option."
	s.run().mustFail(t, 42, msg)
	s.runWith(strings.NewReader("")).mustFail(t, 42, msg)
	s.run("-p", "").mustFail(t, 42, msg)
	if n := len(s.invocations()); n != 3 {
		t.Errorf("logged %d invocations, want 3", n)
	}
}

func TestModelChoice(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	check := func(s *sandbox, wantModel string, args ...string) {
		t.Helper()
		out := s.run(append([]string{"-o", "json"}, args...)...).mustSucceed(t).jsonOut(t)
		if resp := out["response"].(string); !strings.Contains(resp, " model="+wantModel+" ") {
			t.Errorf("args %q: response %q does not name model %s", args, resp, wantModel)
		}
		models := out["stats"].(map[string]any)["models"].(map[string]any)
		if _, ok := models[wantModel]; !ok || len(models) != 1 {
			t.Errorf("args %q: stats name models %v, want only %s", args, models, wantModel)
		}
	}
	check(s, geminitest.DefaultModel, "hi")
	withEnv := s.with("GEMINI_MODEL=env-model")
	check(withEnv, "env-model", "hi")
	check(withEnv, "flag-model", "-m", "flag-model", "hi")
}

func TestSystemPrompt(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	const content = "You are terse.\nNever apologise."
	abs := filepath.Join(t.TempDir(), "system.md")
	writeFile(t, abs, content)
	writeFile(t, filepath.Join(s.dir, "rel.md"), "Relative prompt")
	writeFile(t, filepath.Join(s.dir, ".gemini", "system.md"), "Default location")

	tests := []struct {
		value      string
		wantPath   string
		wantSystem string
	}{
		{abs, abs, content},
		{"rel.md", filepath.Join(s.dir, "rel.md"), "Relative prompt"},
		{"true", filepath.Join(s.dir, ".gemini", "system.md"), "Default location"},
		{"1", filepath.Join(s.dir, ".gemini", "system.md"), "Default location"},
		{"false", "", ""},
		{"0", "", ""},
	}
	for _, tt := range tests {
		r := s.with("GEMINI_SYSTEM_MD=" + tt.value).run("hi").mustSucceed(t)
		if want := geminitest.Answer(1, geminitest.DefaultModel, tt.wantSystem, "hi"); r.answerLine(t) != want {
			t.Errorf("GEMINI_SYSTEM_MD=%s: answer\n got %s\nwant %s", tt.value, r.answerLine(t), want)
		}
		inv := s.lastInvocation()
		if inv.SystemMdPath != tt.wantPath || inv.SystemMd != tt.wantSystem || inv.Env["GEMINI_SYSTEM_MD"] != tt.value {
			t.Errorf("GEMINI_SYSTEM_MD=%s: logged path %q, content %q, env %q", tt.value, inv.SystemMdPath, inv.SystemMd, inv.Env)
		}
	}

	missing := filepath.Join(t.TempDir(), "missing.md")
	s.with("GEMINI_SYSTEM_MD="+missing).run("hi").mustFail(t, 1, missing)
	if inv := s.lastInvocation(); inv.SystemMdPath != missing || inv.Prompt != "hi" {
		t.Errorf("missing file: logged path %q and prompt %q", inv.SystemMdPath, inv.Prompt)
	}
}

func TestLoggedEnvironment(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	s.run("hi").mustSucceed(t)
	if env := s.lastInvocation().Env; len(env) != 0 {
		t.Errorf("logged env %q with none of the variables set", env)
	}
	s.with("GEMINI_CLI_NO_RELAUNCH=true", "GEMINI_MODEL=", "UNRELATED=1").run("hi").mustSucceed(t)
	env := s.lastInvocation().Env
	if len(env) != 2 || env["GEMINI_CLI_NO_RELAUNCH"] != "true" {
		t.Errorf("logged env %q", env)
	}
	if v, ok := env["GEMINI_MODEL"]; !ok || v != "" {
		t.Errorf("an empty GEMINI_MODEL is logged as %q (present %v), want present and empty", v, ok)
	}
}

func TestLoggedProcess(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	s.run("hi").mustSucceed(t)
	inv := s.lastInvocation()
	if inv.Ppid != os.Getpid() || inv.Pid <= 0 || inv.Pid == os.Getpid() {
		t.Errorf("logged pid %d and ppid %d; this test is pid %d", inv.Pid, inv.Ppid, os.Getpid())
	}
	if inv.Cwd != s.dir {
		t.Errorf("logged cwd %q, want %q", inv.Cwd, s.dir)
	}
	if inv.ChildPid != 0 {
		t.Errorf("logged child pid %d without [[child]]", inv.ChildPid)
	}
}

// TestConcurrentLogging checks that the log's lines stay whole when several runs append at once.
func TestConcurrentLogging(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	const runs = 8
	type outcome struct {
		r   result
		err error
	}
	done := make(chan outcome)
	for i := range runs {
		go func() {
			prompt := variedText(256<<10, fmt.Sprintf("run %d line %%d\n", i))
			r, err := s.try(strings.NewReader(prompt))
			done <- outcome{r, err}
		}()
	}
	for range runs {
		o := <-done
		if o.err != nil {
			t.Fatal(o.err)
		}
		o.r.mustSucceed(t)
	}
	invs := s.invocations()
	if len(invs) != runs {
		t.Fatalf("logged %d invocations, want %d", len(invs), runs)
	}
	for _, inv := range invs {
		if inv.StdinBytes != 256<<10 || len(inv.Prompt) != 256<<10 {
			t.Errorf("an entry holds %d stdin bytes and a prompt of %d", inv.StdinBytes, len(inv.Prompt))
		}
	}
}

func TestBadSelfTimeout(t *testing.T) {
	t.Parallel()
	newSandbox(t).with(geminitest.EnvSelfTimeout+"=soon").run("hi").mustFail(t, 1, geminitest.EnvSelfTimeout)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStdinCut: like the real CLI, the fake reads at most 8 MiB of stdin,
// cut at a character's edge, and warns on stderr.
func TestStdinCut(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	// "é" is two bytes: the 8 MiB edge falls inside one.
	prompt := "x" + strings.Repeat("é", maxStdin/2+10)
	r := s.runWith(strings.NewReader(prompt), "-o", "json").mustSucceed(t)
	if !strings.Contains(r.stderr, "stdin input truncated to 8388608 bytes") {
		t.Errorf("stderr %q", r.stderr)
	}
	if inv := s.lastInvocation(); inv.StdinBytes != maxStdin-1 || inv.Prompt != prompt[:maxStdin-1] {
		t.Errorf("logged %d stdin bytes, want %d", inv.StdinBytes, maxStdin-1)
	}
}
